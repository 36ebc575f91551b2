/*
 * rn_conf.h - the system configuration file, /etc/ri2n/ri2n.conf (RI2N_CONF
 * names another; set empty or /dev/null, none).  One `RI2N_NAME = value` a
 * line, the names of the environment variables of rn_knobs.h and of the
 * libfabric provider's parameters (FI_RI2N_*, src/host/rfi_knob_list.h), `#`
 * comments and blank lines.  The file sits under the environment: a variable set and
 * not empty wins over the file's line (rn_knobs.c asks the environment
 * first, then here).  Read once per process, at the first knob read.
 */
#ifndef RN_CONF_H
#define RN_CONF_H

#include <stddef.h>

#define RN_CONF_PATH "/etc/ri2n/ri2n.conf"
#define RN_CONF_MAX_BYTES 65536 /* larger is no configuration file: refused */
#define RN_CONF_WHY 160         /* room for rn_conf_parse_line's sentence */

/* What one line of a file is (rn_conf_parse_line). */
enum rn_conf_line { RN_CONF_BLANK, RN_CONF_SET, RN_CONF_BAD };

/*
 * Parses one line, in place (no newline): a blank or comment line, or
 * `NAME = value` (*name and *value point into line, trimmed), or a bad one
 * (*why says what is wrong, a constant or written in buf, RN_CONF_WHY
 * bytes).  The name and value are checked against the tables of knobs: an
 * unknown name, RI2N_KEY (a key belongs in its own file, RI2N_KEY_FILE), a
 * number out of its knob's range or an unknown RI2N_LOG level is BAD.  Pure.
 */
enum rn_conf_line rn_conf_parse_line(char *line, const char **name, const char **value,
				     const char **why, char *buf);

/*
 * The file's value of knob `env` ("RI2N_MTU"), NULL when the file does not
 * set it; *line (may be NULL) its line number.  The first call of a process
 * reads the file and reports on stderr, once, every line it ignored (file
 * and line number), a file it could not read or does not trust.
 */
const char *rn_conf_get(const char *env, int *line);
/* The file this process read, "" for none (RI2N_CONF empty or /dev/null). */
const char *rn_conf_path(void);
/*
 * The file's state in words for ri2n-info: "read", "not present",
 * "ignored: ..." (why), "none".
 */
const char *rn_conf_state(void);
/* 1 when the file tried to set RI2N_KEY: the key the site asked for is refused. */
int rn_conf_key_refused(void);
/* Tests only: forgets the file read, so the next call reads it again. */
void rn_conf_reset(void);

#endif
