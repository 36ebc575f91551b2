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
/*
 * Applies the cluster key from RI2N_KEY (64 hex digits) or RI2N_KEY_FILE (a
 * file holding them), if one is set.  A bad key is an error, never ignored:
 * running without the key the user asked for would be silently insecure.
 * Returns 0 or -EINVAL (logged, never with the key).
 */
int rn_knobs_key_from_env(rn_config *cfg);
/* The same from a file given by path (the BTL's btl_ri2n_key_file). */
int rn_knobs_key_from_file(rn_config *cfg, const char *path);

#endif
