/* zp_coll.h — the collective kinds, shared by the schedule (sim/) and the kernels that run them
 * (kernels/): one definition, in the layer both may use. */
#ifndef ZP_COLL_H
#define ZP_COLL_H

typedef enum {
    ZP_COLL_ALLREDUCE = 0,
    ZP_COLL_REDUCE_SCATTER,
    ZP_COLL_ALLGATHER,
    ZP_COLL_BROADCAST,
    ZP_COLL_COUNT
} zp_coll_kind;

#endif
