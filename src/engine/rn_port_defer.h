/*
 * rn_port_defer.h - an inline thread's datagrams go out after it lets go of
 * the host lock (rn_port_defer.c).
 *
 * A small request's answer spends most of its time under the host lock in
 * the send system call (on a veth, the receiver's softirq runs inside it),
 * and the threads of a multithreaded server queue behind it on the one
 * lock.  So an inline call that queued a few datagrams copies them out at
 * its leave and sends them with the lock free; the engine thread, large
 * queues and a socket whose last such send failed send under the lock as
 * before.
 */
#ifndef RN_PORT_DEFER_H
#define RN_PORT_DEFER_H

struct rn_usock;

/* Under the host lock, inline: 1 if u's queue waits for the leave (0: send it now). */
int rn_port_defer(struct rn_usock *u);
/*
 * Under the host lock, at the leave: the queues waiting are copied out (or
 * sent now if they cannot be).  Returns how many are to be sent after.
 */
int rn_port_defer_take(void);
/* After the lock: sends what rn_port_defer_take copied out. */
void rn_port_defer_send(void);
/* Under the host lock, left without an inline leave: the queues waiting go now. */
void rn_port_defer_flush(void);
/* Whether a queue waits for this thread's leave. */
int rn_port_deferred(void);

#endif
