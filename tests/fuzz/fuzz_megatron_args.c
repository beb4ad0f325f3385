/* fuzz_megatron_args — Megatron-LM arguments (a file of them, or a launch script) through zp_megatron_args_parse, then its model and pinned request (fuzz_launch.h). */
#include "fuzz_launch.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) { return fz_launch(data, size, zp_megatron_args_parse); }
