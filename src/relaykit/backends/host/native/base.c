/* relaykit native host kernels: the library's identity.
 *
 * Every *.c file in this directory is compiled into one shared library
 * (backend/host_native.py). Kernels take raw float pointers and sizes, never
 * allocate, never keep state, and compute one block of their work per call,
 * so that the host workers can run the blocks of one operator in parallel.
 */
#include <stddef.h>

const char *rk_abi(void) { return "relaykit-host-1"; }
