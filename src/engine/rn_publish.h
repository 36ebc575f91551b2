/*
 * rn_publish.h - the per-process snapshot ri2n-stat reads (rn_publish.c).
 */
#ifndef RN_PUBLISH_H
#define RN_PUBLISH_H

#include <sys/types.h>

/*
 * Opens (creating it with `mode` if missing) the directory the snapshots go
 * to, and checks it can be trusted: a directory, not a symlink, owned by
 * this user; its mode is set to `mode` (0: the mode it has, without write
 * for group and others).  Returns the directory's descriptor (O_CLOEXEC),
 * or -1 with *why saying what is wrong.
 */
int rn_publish_dir_open(const char *dir, mode_t mode, const char **why);

/* Starts publishing; called in the engine thread. */
void rn_publish_start(void);
/* After fork, in the child: the parent's file is not ours. */
void rn_publish_forget(void);

#endif
