/*
 * rn_knobs.h - every user-settable knob, once: its RI2N_* environment
 * variable, its RI2N_SOL socket option, its unit and its bounds.  The
 * environment sets a process's defaults; options change one socket.
 */
#ifndef RN_KNOBS_H
#define RN_KNOBS_H

#include <stdint.h>

#include "rn_core.h"

/* Applies socket option `opt` (enum ri2n_option) = v; 0 or -EINVAL / -ENOPROTOOPT. */
int rn_knob_set(rn_config *cfg, int opt, int64_t v);
/* Reads option `opt` into *v; 0 or -ENOPROTOOPT. */
int rn_knob_get(const rn_config *cfg, int opt, int64_t *v);
/* Applies every RI2N_* variable set in the environment; warns about bad ones. */
void rn_knobs_from_env(rn_config *cfg);

#endif
