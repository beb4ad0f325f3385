/* fuzz_nemo — a NeMo YAML through zp_nemo_parse, then its model and pinned request (fuzz_launch.h). */
#include "fuzz_launch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_launch(data, size, zp_nemo_parse); }
