/* fuzz_platform — SimGrid platform files through zp_engine_check_platform (the file API: it loads the
 * platform in a child process, so a SimGrid abort is the child's). Checks that every input ends in a
 * status (bounded by the check's own timeout), with sane counts on success. Slow (a fork and a SimGrid
 * start per input): run it with few executions. */
#include <unistd.h>

#include "fuzz_common.h"
#include "zp_engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char path[64];
    if (!path[0]) {
        snprintf(path, sizeof path, "/tmp/zp-fuzz-platform-%d.xml", (int)getpid());
        zp_engine_set_platform_timeout(5.0);
    }
    FILE *f = fopen(path, "wb");
    if (!f)
        abort();
    if (size)
        fwrite(data, 1, size, f);
    fclose(f);
    int gpn = -1, nodes = -1;
    if (zp_engine_check_platform(path, &gpn, &nodes) == ZP_OK)
        FZ_ASSERT(gpn >= 1 && nodes >= 1, "gpn %d nodes %d", gpn, nodes);
    else
        FZ_ASSERT(zp_error_message()[0] != '\0', "failure without a message");
    unlink(path);
    return 0;
}
