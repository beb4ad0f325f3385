/* zp_exec_cli.h — the `zplan exec` command (argv[0] = "exec"): returns the exit code. */
#ifndef ZP_EXEC_CLI_H
#define ZP_EXEC_CLI_H

int zp_exec_main(int argc, char **argv);

#endif
