/* zp_sweep.h — a sweep: many what-if searches (cells), each giving its best plan as one row.
 *
 * The cells come from the command line (models x clusters x GPU counts, in that order: the model
 * outermost, the GPU count innermost) or from a grid file, one cell per line:
 *
 *     # a comment (a line whose first non-blank character is '#'); blank lines are skipped
 *     model,gpus,cluster          <- the header: the columns model and gpus, cluster optional, any order
 *     gpt3-175B,1K,dgx-h100
 *     llama-2-70b,512             <- an empty or absent cluster is the default one (--cluster)
 *
 * Cells are split over ranks statically, round-robin (cell i to rank i % ranks), so that ranks get
 * alike shares when cost grows along a list; each rank's rows are gathered back in cell order, so the
 * output does not depend on the number of ranks. A row is plain bytes (no pointers) for the gather.
 * Library code: statuses with messages ("grid.csv:7: ..."), no printing, no MPI. */
#ifndef ZP_SWEEP_H
#define ZP_SWEEP_H

#include <stdint.h>

#include "zp_search.h"

/* Most cells of one sweep. Each cell is a plan search of ~0.1-2 s (reduced simulation; analytic:
 * ~1 ms), so 4096 cells are about an hour on 2 cores: a larger sweep is more likely a typo (a list
 * multiplied by another) than a plan, and its rows are gathered in memory (~2 KB each). */
#define ZP_SWEEP_MAX_CELLS 4096
/* Longest model or cluster text of a cell (a zoo name, a size, a config.json or platform path). */
#define ZP_SWEEP_SPEC_LEN 256
/* Largest grid file read (bytes): 4096 rows of two paths each. */
#define ZP_SWEEP_GRID_MAX_BYTES (4u << 20)

typedef struct {
    char model[ZP_SWEEP_SPEC_LEN];   /* as given: zoo name, size or config.json path */
    char cluster[ZP_SWEEP_SPEC_LEN]; /* as given: preset name or platform file */
    int64_t gpus;
    int line;                        /* its line in the grid file; 0 when from the command line */
} zp_sweep_cell;

typedef struct {
    zp_sweep_cell *cells;
    int n;
} zp_sweep_cells;

/* The cells models x clusters x gpus of three comma-separated lists (the model outermost). ZP_EINVAL
 * naming the option for an empty entry, a bad GPU count, or more than ZP_SWEEP_MAX_CELLS cells. */
zp_status zp_sweep_cells_cross(const char *models, const char *clusters, const char *gpus, zp_sweep_cells *out);
/* The cells of a grid file's text (format above); `path` names it in messages, which start with
 * "path:line: " for a bad row; `default_cluster` fills an empty or absent cluster. */
zp_status zp_sweep_grid_parse(const char *text, const char *path, const char *default_cluster,
                              zp_sweep_cells *out);
/* The same, reading the file (at most ZP_SWEEP_GRID_MAX_BYTES). */
zp_status zp_sweep_grid_read(const char *path, const char *default_cluster, zp_sweep_cells *out);
void zp_sweep_cells_free(zp_sweep_cells *c); /* accepts NULL */

/* Static split: the rank that computes cell `cell` of a sweep on `ranks` ranks (round-robin). */
int zp_sweep_owner(int cell, int ranks);
/* How many of `ncells` cells rank `rank` of `ranks` computes: its cells are rank, rank + ranks, ... */
int zp_sweep_share(int ncells, int rank, int ranks);

/* One cell's answer. */
typedef struct {
    int32_t cell;      /* its index in the sweep (0-based) */
    int32_t found;     /* 1: `best` is the best fitting plan; 0: nothing fits, `best` is the closest plan
                          (none when plans is 0: best.reason says why) */
    int32_t plans;     /* candidate plans evaluated */
    int32_t plans_fit; /* of which fit */
    char model[ZP_MODEL_NAME_LEN]; /* the model's name, as resolved ("gpt3-175B"; a size's generated name) */
    zp_eval best;      /* method and sim are NULL here (pointers do not cross processes): zp_sweep_row_eval */
    char method[16];   /* best.method: "analytic" or "simgrid" */
    char sim[16];      /* best.sim: "reduced", "full", or "" */
} zp_sweep_row;

/* The row of cell `cell` of model `model` from its search. */
void zp_sweep_row_fill(zp_sweep_row *row, int cell, const zp_model *model, const zp_search_result *res);
/* The row of a cell that has no plan at all (its options leave no candidate): `why` in best.reason. */
void zp_sweep_row_none(zp_sweep_row *row, int cell, const zp_model *model, const char *why);
/* The row's plan with method and sim pointing into the row (valid while the row is). */
zp_eval zp_sweep_row_eval(const zp_sweep_row *row);

#endif
