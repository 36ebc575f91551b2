/*
 * rn_publish.h - the per-process snapshot ri2n-stat reads (rn_publish.c).
 */
#ifndef RN_PUBLISH_H
#define RN_PUBLISH_H

#include <sys/types.h>

/* Starts publishing; called in the engine thread. */
void rn_publish_start(void);
/* After fork, in the child: the parent's file is not ours. */
void rn_publish_forget(void);

#endif
