#include "ri2n.h"

const char *ri2n_version(void) { return "0.1.0"; }
