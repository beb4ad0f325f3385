#include "zp_time.h"

#include <time.h>

double zp_time_now_s(void)
{
    /* CLOCK_MONOTONIC cannot fail on Linux for a valid timespec: no status to return */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
