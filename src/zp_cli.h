/* zp_cli.h — the CLI's commands; each returns the process exit code (0, 1 or 2). */
#ifndef ZP_CLI_H
#define ZP_CLI_H

#include <stdio.h>

#include "zp_status.h"
#include "zp_table.h"

int zp_cli_whatif(int argc, char **argv, const char *usage);
int zp_cli_list(int argc, char **argv);
int zp_cli_report(int argc, char **argv);

/* Prints "zplan: <message>" for a failed status and returns its exit code. */
int zp_cli_fail(zp_status st);
/* Opens the output: stdout when path is NULL, else an atomic temporary beside path. */
typedef struct {
    FILE *f;
    void *atomic;
} zp_cli_out;
zp_status zp_cli_out_open(const char *path, zp_cli_out *o);
zp_status zp_cli_out_close(zp_cli_out *o, zp_status st);
/* Writes one table to the output. */
int zp_cli_write_table(zp_table *t, zp_format fmt, const char *path);

#endif
