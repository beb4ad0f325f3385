/* zp_launch.c — a launch read from a framework's files: the key tables' reader, the model and the pinned
 * request (see zp_launch.h). */
#include "zp_launch.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "zp_fp8.h"
#include "zp_framework.h"
#include "zp_io.h"

const char *zp_launch_kind_name(zp_launch_kind k)
{
    static const char *const names[ZP_NLAUNCH] = {"Megatron-LM arguments", "torchtitan TOML", "NeMo YAML",
                                                  "DeepSpeed config"};
    return (unsigned)k < ZP_NLAUNCH ? names[k] : "launch";
}

void zp_launch_note(zp_launch *l, const char *fmt, ...)
{
    if (l->notes.n >= ZP_DS_MAX_NOTES)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->notes.line[l->notes.n++], sizeof l->notes.line[0], fmt, ap);
    va_end(ap);
}

void zp_launch_init(zp_launch *l, zp_launch_kind kind, const char *name)
{
    memset(l, 0, sizeof *l);
    l->kind = kind;
    snprintf(l->name, sizeof l->name, "%s", name ? name : zp_launch_kind_name(kind));
    l->swiglu = l->rmsnorm = l->rope = l->untied = l->no_bias = ZP_LAUNCH_UNSET;
    l->hidden_dropout = l->attn_dropout = -1;
    l->stage = l->recompute = l->sp = l->flash = l->overlap = l->fusion = ZP_LAUNCH_UNSET;
    l->precision = l->grad_fp32 = l->tp_overlap = l->param_gather = l->p2p_overlap = ZP_LAUNCH_UNSET;
    l->sac_every = l->compile = l->swiglu_fusion = ZP_LAUNCH_UNSET;
    l->tt_first_less = l->tt_last_less = ZP_LAUNCH_UNSET;
}

zp_status zp_launch_entries_add(zp_launch_entries *l, const char *name, int line, const char *key, size_t klen,
                                const char *value, size_t vlen, int has_value)
{
    if (klen >= sizeof l->e[0].key || vlen >= sizeof l->e[0].value)
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s too long (%zu characters)", name, line,
                       klen >= sizeof l->e[0].key ? "key" : "value", klen >= sizeof l->e[0].key ? klen : vlen);
    if (l->n == l->cap) {
        const int cap = l->cap ? 2 * l->cap : 64;
        if (cap > 100000)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: more than 100000 keys", name, line);
        zp_launch_entry *ne = realloc(l->e, (size_t)cap * sizeof *ne);
        if (!ne)
            return ZP_FAIL(ZP_ENOMEM, "out of memory");
        l->e = ne;
        l->cap = cap;
    }
    zp_launch_entry *e = &l->e[l->n++];
    memcpy(e->key, key, klen);
    e->key[klen] = '\0';
    memcpy(e->value, value ? value : "", value ? vlen : 0);
    e->value[value ? vlen : 0] = '\0';
    e->has_value = has_value;
    e->line = line;
    return ZP_OK;
}

void zp_launch_entries_free(zp_launch_entries *l)
{
    free(l->e);
    l->e = NULL;
    l->n = l->cap = 0;
}

int zp_launch_key_distance(const char *a, const char *b)
{
    const size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64 || (la > lb ? la - lb : lb - la) > 3)
        return 3;
    int d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = (int)i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = (int)j;
    for (size_t i = 1; i <= la; i++)
        for (size_t j = 1; j <= lb; j++) {
            const int sub = tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]);
            int v = d[i - 1][j - 1] + sub;
            v = v < d[i - 1][j] + 1 ? v : d[i - 1][j] + 1;
            v = v < d[i][j - 1] + 1 ? v : d[i][j - 1] + 1;
            if (i > 1 && j > 1 && tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 2]) &&
                tolower((unsigned char)a[i - 2]) == tolower((unsigned char)b[j - 1]) && d[i - 2][j - 2] + 1 < v)
                v = d[i - 2][j - 2] + 1;
            d[i][j] = v;
        }
    return d[la][lb] < 3 ? d[la][lb] : 3;
}

/* ---- values ---- */

static zp_status parse_int(const zp_launch *l, const zp_launch_entry *e, const char *sep, int64_t lo, int64_t *out)
{
    char *end;
    errno = 0;
    const long long v = strtoll(e->value, &end, 10);
    while (*end && isspace((unsigned char)*end))
        end++;
    if (!e->has_value || e->value[0] == '\0' || *end || errno || v < lo || v > (INT64_C(1) << 40))
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s%s: '%s' is not a whole number from %lld", l->name, e->line, sep, e->key,
                       e->value, (long long)lo);
    *out = v;
    return ZP_OK;
}

static zp_status parse_bool(const zp_launch *l, const zp_launch_entry *e, const char *sep, int *out)
{
    static const char *const yes[] = {"true", "1", "yes", "on"}, *const no[] = {"false", "0", "no", "off"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(e->value, yes[i]) == 0) {
            *out = 1;
            return ZP_OK;
        }
        if (strcasecmp(e->value, no[i]) == 0) {
            *out = 0;
            return ZP_OK;
        }
    }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: %s%s: '%s' is not true or false", l->name, e->line, sep, e->key, e->value);
}

/* One entry through its table row. */
static zp_status apply_one(zp_launch *l, const zp_launch_key *k, const zp_launch_entry *e, const char *sep)
{
    char *field = (char *)l + k->off;
    double x;
    char *end;
    switch (k->type) {
    case ZP_LK_INT: return parse_int(l, e, sep, 1, (int64_t *)(void *)field);
    case ZP_LK_INT0: return parse_int(l, e, sep, -1, (int64_t *)(void *)field);
    case ZP_LK_REAL:
        errno = 0;
        x = strtod(e->value, &end);
        if (!e->has_value || end == e->value || *end || errno || !isfinite(x) || x < 0 || x > 1e15)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: %s%s: '%s' is not a number from 0", l->name, e->line, sep, e->key,
                           e->value);
        *(double *)(void *)field = x;
        return ZP_OK;
    case ZP_LK_BOOL: {
        int b = 0;
        ZP_TRY(parse_bool(l, e, sep, &b));
        *(int *)(void *)field = b ? k->set : !k->set;
        return ZP_OK;
    }
    case ZP_LK_FLAG:
        if (e->has_value)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: %s%s is a flag and takes no value (got '%s')", l->name, e->line, sep,
                           e->key, e->value);
        *(int *)(void *)field = k->set;
        return ZP_OK;
    case ZP_LK_STR:
        if (strlen(e->value) >= 64)
            return ZP_FAIL(ZP_EINVAL, "%s:%d: %s%s: '%.40s...' is longer than 63 characters", l->name, e->line, sep,
                           e->key, e->value);
        memcpy(field, e->value, strlen(e->value) + 1);
        return ZP_OK;
    case ZP_LK_FN: return k->fn(l, e);
    case ZP_LK_KNOWN: return ZP_OK;
    case ZP_LK_REFUSE:
        return ZP_FAIL(ZP_EINVAL, "%s:%d: %s%s: %s", l->name, e->line, sep, e->key, k->why);
    }
    return ZP_OK;
}

/* A key no row names: a misspelling of one the table reads (within 2 edits, 1 under 6 letters) exits 2 naming
 * it; any other is counted (and the first few named) in a note. */
static zp_status unknown_key(zp_launch *l, const zp_launch_key *table, const zp_launch_entry *e, const char *sep,
                             int *unknown, char *first, size_t flen)
{
    for (int i = 0; table[i].name; i++) {
        if (table[i].type == ZP_LK_KNOWN)
            continue;
        const size_t n = strlen(table[i].name);
        if (zp_launch_key_distance(e->key, table[i].name) <= (n < 6 ? 1 : 2))
            return ZP_FAIL(ZP_EINVAL, "%s:%d: unknown key %s%s: did you mean %s%s? (zplan reads that key, and it "
                                      "changes the answer: fix its name)",
                           l->name, e->line, sep, e->key, sep, table[i].name);
    }
    if ((*unknown)++ < 4) {
        const size_t used = strlen(first);
        snprintf(first + used, flen - used, "%s%s%s", used ? ", " : "", sep, e->key);
    }
    return ZP_OK;
}

zp_status zp_launch_recompute_modules(zp_launch *l, const zp_launch_entry *e)
{
    char what[192];
    snprintf(what, sizeof what, "%.100s:%d: %.60s", l->name, e->line, e->key);
    return zp_rc_module_parse(e->value, what, &l->rc_modules);
}

zp_status zp_launch_apply(zp_launch *l, const zp_launch_key *table, const zp_launch_entries *en, const char *sep)
{
    int unknown = 0;
    char first[200] = "";
    for (int i = 0; i < en->n; i++) {
        const zp_launch_entry *e = &en->e[i];
        const zp_launch_key *k = NULL;
        for (int j = 0; table[j].name && !k; j++)
            if (strcmp(table[j].name, e->key) == 0)
                k = &table[j];
        if (!k) {
            ZP_TRY(unknown_key(l, table, e, sep, &unknown, first, sizeof first));
            continue;
        }
        /* a value the file does not set (a shell variable, an interpolation) is refused where it is read */
        if (k->type <= ZP_LK_STR && e->has_value && (strchr(e->value, '$') || strcmp(e->value, "???") == 0))
            return ZP_FAIL(ZP_EINVAL, "%s:%d: %s%s: its value '%s' is not set in the file (zplan reads that key: "
                                      "write the value)",
                           l->name, e->line, sep, e->key, e->value);
        ZP_TRY(apply_one(l, k, e, sep));
    }
    if (unknown)
        zp_launch_note(l, "%d key%s zplan does not read %s ignored (%s%s)", unknown, unknown == 1 ? "" : "s",
                       unknown == 1 ? "was" : "were", first, unknown > 4 ? ", ..." : "");
    return ZP_OK;
}

zp_status zp_launch_set_moe_dispatcher(zp_launch *l, const zp_launch_entry *e, const char *key)
{
    static const char *const names[] = {"alltoall", "flex", "allgather"};
    for (int k = 0; k < 3; k++)
        if (strcmp(e->value, names[k]) == 0) {
            l->moe_dispatch = k + 1;
            return ZP_OK;
        }
    return ZP_FAIL(ZP_EINVAL, "%s:%d: %s '%s': use alltoall, flex or allgather", l->name, e->line, key, e->value);
}

zp_status zp_launch_set_fp8_recipe(zp_launch *l, const zp_launch_entry *e, const char *key)
{
    if (zp_fp8_parse_megatron(e->value, &l->fp8_recipe) == ZP_OK)
        return ZP_OK;
    char why[256];
    snprintf(why, sizeof why, "%s", zp_error_message());
    return ZP_FAIL(ZP_EINVAL, "%s:%d: %s%s", l->name, e->line, key, why);
}
