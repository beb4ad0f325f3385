/* zp_cli_opts.h — the one option parser of every command: one table of options (name, the commands
 * that take it, how its value is read), so the what-if, `report`, `schedule`, `exec` and `calibrate`
 * share names, size suffixes (K, M, G, T; Ki, Mi, Gi) and error messages.
 *
 * Plan options are constraints: what is given is fixed, everything else is searched (stage, MP degree,
 * micro-batch, ZeRO-R Pa / Pa+cpu, offload); --exact pins what is not given to its default, as a
 * DeepSpeed config does. `exec` runs exactly one plan: what is not given takes exec's defaults. */
#ifndef ZP_CLI_OPTS_H
#define ZP_CLI_OPTS_H

#include <stdint.h>
#include <stdio.h>

#include "zp_search.h"
#include "zp_table.h"

/* The commands, as a mask in the option table. */
typedef enum {
    ZP_CMD_WHATIF = 1 << 0,    /* zplan --model M --gpus N */
    ZP_CMD_VIEW = 1 << 1,      /* zplan report scaling|models|configs|memory: plan searches */
    ZP_CMD_TABLE = 1 << 2,     /* zplan report table1|table2 */
    ZP_CMD_LIST = 1 << 3,      /* zplan models|clusters */
    ZP_CMD_SCHEDULE = 1 << 4,  /* zplan schedule */
    ZP_CMD_EXEC = 1 << 5,      /* zplan exec */
    ZP_CMD_CALIBRATE = 1 << 6, /* zplan calibrate */
    ZP_CMD_VALIDATION = 1 << 7, /* zplan report validation: zplan exec --validate over a sweep */
    ZP_CMD_COMPARE = 1 << 8,   /* zplan compare: the best plan of each of several choices, side by side */
    ZP_CMD_SWEEP = 1 << 9,     /* zplan sweep: what-if searches over models x GPU counts, under MPI */
} zp_cli_cmd;

typedef struct {
    zp_cli_cmd cmd;
    const char *name;          /* "zplan", "zplan report table2", "zplan exec", ... for messages */
    int help;                  /* --help / -h was given */
    /* output */
    zp_format fmt;
    int fmt_given;
    const char *out;           /* -o, --output */
    int top;
    /* the model, the cluster, and where costs come from */
    const char *model, *models, *cluster, *preset, *profile, *gpus, *gpu_mem;
    double gpu_mem_bytes;      /* --gpu-mem parsed (0: not given) */
    int64_t seq;               /* 0: the model's */
    int64_t mtp;               /* --mtp-layers: the model's multi-token prediction modules (-1: the model's) */
    /* the plan: constraints (the base plan's values, their bits of r.searched cleared) and search settings */
    zp_search_req r;
    int checkpoint_given, overlap_given;
    int p2p_given;             /* --overlap-p2p-comm given (on or off) */
    int swiglu_given;          /* --swiglu-fusion given (on or off) */
    /* FP8 training: --precision fp8 given, --fp8-recipe given (the recipe itself is r.base.fp8) */
    int fp8_precision, fp8_recipe_given;
    const char *ds_config, *emit_ds, *emit_megatron, *report_html;
    const char *launch;        /* --megatron-args / --torchtitan / --nemo FILE: a launch to judge */
    int launch_kind;           /* its zp_launch_kind */
    const char *launch_opt;    /* the option that named it, for messages */
    const char *emit_torchtitan; /* --emit-torchtitan FILE */
    int max_model;             /* --max-model: the largest model of --model's shape that fits */
    double train_tokens;       /* --train-tokens: a token budget to price (0: none) */
    double gpu_hour_price;     /* --gpu-hour-price: USD per GPU-hour (0: none) */
    int flash_given;           /* --flash-attention / --flash-kernel (1) or --no-flash-attention (0) given */
    int compile_given;         /* --compile on|off given (r.base.eager: off) */
    /* compare: the comma-separated lists of --stage, --mp, --offload, --micro-batch (NULL: not given);
       each item was checked by that option's own setter */
    const char *cmp_list[4];
    /* schedule */
    int64_t rank;
    const char *replay;        /* a schedule JSON to replay instead of a plan */
    /* exec */
    int64_t steps, seed;
    double min_seconds, lr, timeout_s;
    const char *backend;
    int validate;
    /* report table1 / table2 */
    const char *dp_list, *mp_list;
    double k;
    /* report validation */
    const char *ranks, *stages;
    /* sweep */
    const char *grid;          /* a grid file of cells */
    const char *partial;       /* where finished rows go as they come (default: OUTPUT.partial with -o) */
    const char *sweep_report;  /* --report KIND of a sweep: "scaling" */
    /* calibrate */
    int quick;
    const char *reps, *warmup, *max_bytes, *hidden, *tokens;
    /* GPUs as data (issue #28) */
    const char *gpu;           /* --gpu NAME|FILE: the GPU preset or spec file replacing the cluster's GPUs */
} zp_cli_args;

/* Parses argv[1..argc-1] for command `cmd` (messages name it as `name`). Defaults first: every plan
 * option open, text format, top 5, exec's and calibrate's defaults. ZP_EINVAL with a message for an
 * unknown option, an option of another command, a missing or bad value, or a stray argument. */
zp_status zp_cli_args_parse(zp_cli_cmd cmd, const char *name, int argc, char **argv, zp_cli_args *a);

/* The options whose values `zplan compare` takes as comma-separated lists, in cmp_list's order. */
extern const char *const zp_cli_compare_opts[4];
/* Applies one option (its long name with "--", and its value or NULL) as the parser does. */
zp_status zp_cli_args_apply(zp_cli_args *a, const char *opt, const char *val);

/* Checks the plan options against each other where that needs no model (e.g. --exact needs --stage). */
zp_status zp_cli_args_check_plan(const zp_cli_args *a);

/* A usage text names a parallel dimension's --help lines by its row (ZP_CLI_DIM_HELP("tensor"): a marker
 * line, ASCII record separator + the row's name) and where the rows it does not name go
 * (ZP_CLI_DIM_HELP_REST); zp_cli_usage_put writes the usage with each marker replaced by the row's help
 * (vocab/zp_dims.c), so a new dimension's option is in `zplan --help` without a line here. */
#define ZP_CLI_DIM_HELP(name) "\x1e" name "\n"
#define ZP_CLI_DIM_HELP_REST "\x1e*\n"
void zp_cli_usage_put(const char *usage, FILE *f);

#endif
