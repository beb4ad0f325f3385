/* zp_builder.c — the schedule builder's appending functions: an op on a stream (or the setup list), an
 * alloc or free (zp_builder.h). */
#include "zp_builder.h"

#include <stdlib.h>
#include <string.h>

zp_op *zp_builder_push(zp_builder *b, int s, int type)
{
    if (b->st != ZP_OK)
        return NULL;
    zp_opvec *v = s < 0 ? &b->setup : &b->s[s];
    if (v->n == v->cap) {
        int cap = v->cap ? 2 * v->cap : 256;
        zp_op *nv = realloc(v->v, (size_t)cap * sizeof *nv);
        if (!nv) {
            b->st = ZP_FAIL(ZP_ENOMEM, "out of memory building the schedule");
            return NULL;
        }
        v->v = nv;
        v->cap = cap;
    }
    zp_op *o = &v->v[v->n++];
    memset(o, 0, sizeof *o);
    o->type = type;
    o->stream = s < 0 ? ZP_STREAM_COMPUTE : (zp_stream)s;
    o->phase = s < 0 ? ZP_PHASE_SETUP : b->phase;
    o->micro = s < 0 ? 0 : b->micro;
    o->layer = s < 0 ? -1 : b->layer;
    o->batch = 1;
    o->item = -1;
    o->id = -1;
    return o;
}

void zp_builder_mem(zp_builder *b, int s, int alloc, zp_buf buf, int index, zp_mem_cat cat, double bytes)
{
    zp_op *o = zp_builder_push(b, s, alloc ? ZP_OPK_ALLOC : ZP_OPK_FREE);
    if (o) {
        o->buf = buf;
        o->item = index;
        o->cat = cat;
        o->bytes = bytes;
    }
}
