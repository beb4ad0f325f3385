/* zp_profile_check FILE [min-ranks-of-intra-node-collectives] — reads a profile with the one
 * reader, prints what the simulator will use, exits 0 when valid (and, if asked, when every
 * collective was measured within the node on that many ranks), 2 otherwise. */
#include <stdio.h>
#include <stdlib.h>

#include "zp_profile.h"

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: zp_profile_check FILE [RANKS]\n");
        return 2;
    }
    zp_profile p;
    zp_status st = zp_profile_read(argv[1], &p);
    if (st != ZP_OK) {
        fprintf(stderr, "zp_profile_check: %s\n", zp_error_message());
        return zp_status_exit_code(st);
    }
    printf("backend %s, copy %.2f GB/s, triad %.2f GB/s, adam %.3g params/s, gemm %d points, peak %.3g FLOP/s\n",
           p.backend, p.copy_gbs, p.triad_gbs, p.adam_params_per_s, p.ngemm, zp_profile_peak_flops(&p, p.gemm_dtype));
    if (!(p.copy_gbs > 0 && p.triad_gbs > 0 && p.adam_params_per_s > 0 && p.ngemm > 0)) {
        fprintf(stderr, "zp_profile_check: a measurement is zero\n");
        return 2;
    }
    if (argc > 2) {
        int want = atoi(argv[2]);
        for (int k = 0; k < ZP_PROFILE_NCOLL; k++) {
            const zp_profile_coll_fit *f = &p.coll[k][ZP_PROFILE_INTRA_NODE];
            if (!f->measured || f->nranks != want || f->npoints < 2) {
                fprintf(stderr, "zp_profile_check: %s intra_node not measured on %d ranks\n",
                        zp_profile_coll_name((zp_profile_coll)k), want);
                return 2;
            }
            double t = zp_profile_collective_time(&p, (zp_profile_coll)k, ZP_PROFILE_INTRA_NODE, 1 << 20, want);
            printf("%s: latency %.3g s, busbw %.3g GB/s, 1 MiB in %.3g s\n", zp_profile_coll_name((zp_profile_coll)k),
                   f->latency_s, f->busbw_gbs, t);
            if (!(t > 0)) {
                fprintf(stderr, "zp_profile_check: no time for %s\n", zp_profile_coll_name((zp_profile_coll)k));
                return 2;
            }
        }
    }
    return 0;
}
