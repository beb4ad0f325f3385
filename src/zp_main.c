/* zplan's main: the command line's dispatch (zplan.c) returns the exit status. */
#include "zp_cli.h"

int main(int argc, char **argv) { return zp_cli_main(argc, argv); }
