/* zp_schedule_io.c — a schedule written by `zplan schedule --format json` read back: its ops in program
 * order, each checked against the op table (an unknown kind, or a kind whose class differs from the
 * table's, is an error naming the op), so a schedule edited or produced by another tool can be
 * replayed. */
#include "zp_schedule.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "zp_io.h"

static int find_name(const char *name, const char *(*name_of)(int), int n)
{
    for (int i = 0; name && i < n; i++)
        if (strcmp(name_of(i), name) == 0)
            return i;
    return -1;
}

static const char *cat_name(int i) { return zp_mem_cat_name((zp_mem_cat)i); }
static const char *opc_name(int i) { return zp_opc_name((zp_opc)i); }

static zp_status read_op(const char *path, size_t i, json_t *j, zp_op *o)
{
    const char *name = json_string_value(json_object_get(j, "name"));
    const char *kind = json_string_value(json_object_get(j, "kind"));
    json_t *bytes = json_object_get(j, "bytes");
    memset(o, 0, sizeof *o);
    o->type = zp_op_find(name);
    if (o->type < 0)
        return ZP_FAIL(ZP_EINVAL, "%s: ops[%zu]: unknown op kind '%s' (zplan schedule --format json lists the "
                                  "kinds it writes)", path, i, name ? name : "(no name)");
    const zp_op_info *in = zp_op_info_get(o->type);
    if (!kind || find_name(kind, opc_name, ZP_NOPC) != (int)in->cls)
        return ZP_FAIL(ZP_EINVAL, "%s: ops[%zu] '%s': kind '%s', but '%s' ops are of kind '%s'", path, i, name,
                       kind ? kind : "(none)", name, zp_opc_name(in->cls));
    if (!json_is_number(bytes) || !isfinite(json_number_value(bytes)) || json_number_value(bytes) < 0)
        return ZP_FAIL(ZP_EINVAL, "%s: ops[%zu] '%s': bytes must be a finite number >= 0", path, i, name);
    o->bytes = json_number_value(bytes);
    o->id = (int)i;
    o->item = -1;
    if (in->cls == ZP_OPC_ALLOC || in->cls == ZP_OPC_FREE) {
        const char *cat = json_string_value(json_object_get(j, "category"));
        int c = find_name(cat, cat_name, ZP_MEM_NCAT);
        if (c < 0)
            return ZP_FAIL(ZP_EINVAL, "%s: ops[%zu] '%s': unknown memory category '%s'", path, i, name,
                           cat ? cat : "(none)");
        o->cat = (zp_mem_cat)c;
    }
    return ZP_OK;
}

zp_status zp_schedule_read_ops(const char *path, zp_op **ops, int *n)
{
    *ops = NULL;
    *n = 0;
    char *text;
    size_t len;
    ZP_TRY(zp_io_read_file(path, (size_t)1 << 31, &text, &len));
    json_error_t err;
    json_t *root = json_loadb(text, len, 0, &err);
    free(text);
    if (!root)
        return ZP_FAIL(ZP_EINVAL, "%s: not valid JSON (line %d, column %d: %s)", path, err.line, err.column, err.text);
    json_t *arr = json_object_get(root, "ops");
    zp_status st = ZP_OK;
    if (!json_is_array(arr) || json_array_size(arr) > (size_t)1 << 28) {
        st = ZP_FAIL(ZP_EINVAL, "%s: no \"ops\" array (write one with zplan schedule --format json)", path);
    } else if (!(*ops = calloc(json_array_size(arr) + 1, sizeof **ops))) {
        st = ZP_FAIL(ZP_ENOMEM, "out of memory");
    } else {
        for (size_t i = 0; i < json_array_size(arr) && st == ZP_OK; i++)
            st = read_op(path, i, json_array_get(arr, i), &(*ops)[i]);
        *n = (int)json_array_size(arr);
    }
    json_decref(root);
    if (st != ZP_OK) {
        free(*ops);
        *ops = NULL;
        *n = 0;
    }
    return st;
}
