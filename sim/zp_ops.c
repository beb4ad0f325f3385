#include "zp_ops.h"

#include <string.h>

const zp_op_info zp_op_table[ZP_NOPK] = {
#define ZP_OP(id, exec, ...) [ZP_OPK_##id] = {__VA_ARGS__},
#include "zp_ops.def"
#undef ZP_OP
};

const zp_op_info *zp_op_info_get(int type) { return type >= 0 && type < ZP_NOPK ? &zp_op_table[type] : NULL; }

int zp_op_find(const char *name)
{
    for (int i = 0; name && i < ZP_NOPK; i++)
        if (strcmp(zp_op_table[i].name, name) == 0)
            return i;
    return -1;
}

const char *zp_op_name(const zp_op *op)
{
    const zp_op_info *i = zp_op_info_get(op->type);
    return i ? i->name : "?";
}

const char *zp_opc_name(zp_opc c)
{
    static const char *const n[ZP_NOPC] = {"compute", "collective", "copy", "alloc", "free", "signal", "wait",
                                               "p2p"};
    return (unsigned)c < ZP_NOPC ? n[c] : "?";
}

const char *zp_stream_name(zp_stream s)
{
    static const char *const n[ZP_NSTREAMS] = {"compute", "comm", "pcie", "cpu", "cp", "tp", "ep"};
    return (unsigned)s < ZP_NSTREAMS ? n[s] : "?";
}

const char *zp_phase_name(zp_phase p)
{
    static const char *const n[] = {"forward", "recompute", "backward", "optimizer", "setup"};
    return (unsigned)p <= ZP_PHASE_SETUP ? n[p] : "?";
}

const char *zp_part_name(zp_part p)
{
    static const char *const n[ZP_NPARTS] = {"compute", "mp_comm", "dp_comm", "optimizer", "offload",
                                             "pp_comm", "none"};
    return (unsigned)p < ZP_NPARTS ? n[p] : "?";
}

const char *zp_group_name(zp_group g)
{
#define ZP_GROUP_NAME(id, name) name,
    static const char *const n[ZP_NGROUPS] = {ZP_GROUPS(ZP_GROUP_NAME)};
#undef ZP_GROUP_NAME
    return (unsigned)g < ZP_NGROUPS ? n[g] : "?";
}

static const struct {
    const char *name;
    zp_part part;
} g_channels[ZP_NCHANNELS] = {
#define ZP_CH_ROW(id, nm, p) [ZP_CH_##id] = {nm, ZP_PART_##p},
    ZP_CHANNELS(ZP_CH_ROW)
#undef ZP_CH_ROW
};

const char *zp_channel_name(zp_channel c) { return (unsigned)c < ZP_NCHANNELS ? g_channels[c].name : "?"; }
zp_part zp_channel_part(zp_channel c) { return (unsigned)c < ZP_NCHANNELS ? g_channels[c].part : ZP_PART_NONE; }

const char *zp_mem_cat_name(zp_mem_cat c)
{
    static const char *const n[ZP_MEM_NCAT] = {"params",      "grads",   "optimizer",     "activations",
                                               "checkpoints", "buffers", "fragmentation", "host", "nvme"};
    return (unsigned)c < ZP_MEM_NCAT ? n[c] : "?";
}

static const struct {
    const char *name;
    zp_buf_per per;
} g_bufs[ZP_NBUF] = {
#define ZP_BUF_ROW(id, nm, p) [ZP_BUF_##id] = {nm, p},
    ZP_BUFFERS(ZP_BUF_ROW)
#undef ZP_BUF_ROW
};

const char *zp_buf_name(zp_buf b) { return (unsigned)b < ZP_NBUF ? g_bufs[b].name : "?"; }
zp_buf_per zp_buf_per_of(zp_buf b) { return (unsigned)b < ZP_NBUF ? g_bufs[b].per : ZP_PER_ONE; }

zp_part zp_op_part(const zp_op *op)
{
    const zp_op_info *i = zp_op_info_get(op->type);
    if (!i)
        return ZP_PART_NONE;
    return i->cls == ZP_OPC_WAIT ? zp_channel_part(op->channel) : i->part;
}
