#include "zp_coll.h"

static const zp_coll_info g_coll[ZP_COLL_COUNT] = {
    [ZP_COLL_ALLREDUCE] = {"allreduce", 2.0, 1},
    [ZP_COLL_REDUCE_SCATTER] = {"reduce_scatter", 1.0, 1},
    [ZP_COLL_ALLGATHER] = {"allgather", 1.0, 1},
    [ZP_COLL_BROADCAST] = {"broadcast", 1.0, 0},
    [ZP_COLL_ALLTOALL] = {"alltoall", 1.0, 1},
};

const zp_coll_info *zp_coll_get(zp_coll_kind kind) { return (unsigned)kind < ZP_COLL_COUNT ? &g_coll[kind] : 0; }

const char *zp_coll_name(zp_coll_kind kind)
{
    const zp_coll_info *c = zp_coll_get(kind);
    return c ? c->name : "?";
}

double zp_coll_busbw_factor(zp_coll_kind kind, int nranks)
{
    const zp_coll_info *c = zp_coll_get(kind);
    if (!c || nranks < 1)
        return 0.0;
    double n = nranks;
    return c->ring ? c->passes * (n - 1.0) / n : 1.0;
}

double zp_coll_ring_time(double bytes, int64_t n, double bw, double lat, double passes)
{
    if (n <= 1)
        return 0.0;
    double steps = passes * (double)(n - 1);
    return steps / (double)n * bytes / bw + steps * lat;
}

double zp_coll_bus_time(double bytes, double busbw_factor, double busbw_gbs)
{
    return bytes * busbw_factor / (busbw_gbs * 1e9);
}

double zp_coll_fit_latency(double latency_s, int fit_nranks, int nranks)
{
    return latency_s * (double)(nranks - 1) / (double)(fit_nranks - 1);
}
