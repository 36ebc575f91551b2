/*
 * rn_netlink.h - the engine follows the kernel's link and address events:
 * a rail whose address is removed or whose link goes down is down at once
 * for every connection, with that cause; its return puts it back.
 */
#ifndef RN_NETLINK_H
#define RN_NETLINK_H

/*
 * Opens the rtnetlink socket and registers it in the engine's event base
 * (rn_engine_start, after the base exists).  A socket the kernel refuses
 * (a sandbox, no netlink) is logged and left out: the receive-count rule
 * and send errors still notice a dead rail, later.  Returns 0.
 */
int rn_netlink_start(void);

/*
 * Reads and applies every event waiting on the socket; the host lock is
 * held.  A driver that saw a send fail calls it first, so that the cause
 * the kernel gave (the address removed) is the one reported.
 */
void rn_netlink_check(void);

/* In the engine thread, host lock held: opens the rails an inline thread saw get an address. */
void rn_netlink_sync(void);

/* In a child after fork(): the parent's socket and event are no longer ours. */
void rn_netlink_forget(void);

#endif
