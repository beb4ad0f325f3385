/* zp_calibrate_tool — `zplan calibrate` on its own, for the tests and the benches:
 * every argument goes to zp_calibrate_main. */
#include "zp_cli.h"

int main(int argc, char **argv) { return zp_calibrate_main(argc, argv); }
