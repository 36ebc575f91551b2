/*
 * ri2n_version.c - the library's version string.
 */
#include "ri2n.h"

#ifndef RI2N_VERSION
#define RI2N_VERSION "0.1.1"
#endif

const char *ri2n_version(void) { return RI2N_VERSION; }
