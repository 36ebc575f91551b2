/*
 * rn_knobs.h - every user-settable knob of a connection (one row of
 * RN_KNOB_LIST, src/core/rn_knob_list.h): its RI2N_* environment variable,
 * its RI2N_SOL socket option, its MCA name, its unit and its bounds.  The
 * environment sets a process's defaults; options change one socket.
 */
#ifndef RN_KNOBS_H
#define RN_KNOBS_H

#include <stdint.h>

#include "rn_core.h"

/* What the user's number of a knob means (the kinds of rn_knob_list.h). */
enum rn_knob_kind { RN_KNOB_K_MS, RN_KNOB_K_COUNT, RN_KNOB_K_MTU, RN_KNOB_K_BYTES };

/* One row of RN_KNOB_LIST. */
typedef struct rn_knob {
	int opt;                 /* enum ri2n_option */
	const char *env;         /* "RI2N_<NAME>" */
	const char *mca;         /* the BTL's parameter after "btl_ri2n_" */
	const char *doc;         /* one line */
	enum rn_knob_kind kind;
	size_t off;              /* its field in rn_config */
	int64_t def, lo, hi;     /* in the user's unit */
} rn_knob;

/* Every knob, in the order they must be applied (RN_KNOB_MTU first). */
extern const rn_knob rn_knobs[RN_KNOB__COUNT];

/* The row of socket option `opt`, or NULL. */
const rn_knob *rn_knob_find(int opt);
/* The unit of a knob's number: "ms", "bytes" or "" (a count). */
const char *rn_knob_unit(const rn_knob *k);
/* The knob's environment variable when set and not empty, else NULL. */
const char *rn_knob_env(int opt);
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
