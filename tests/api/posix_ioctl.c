/*
 * posix_ioctl.c - FIONREAD (SIOCINQ), SIOCOUTQ and SIOCOUTQNSD on ri2n
 * sockets of a program linked with -lri2n answer as TCP's do (docs/API.md):
 * bytes readable now, and bytes written and not acknowledged by the peer,
 * wherever ri2n keeps them (descriptor or ri2n's own buffers).
 *
 * Checked: after readiness FIONREAD equals what a read then gets, over
 * many rounds; with a peer that does not read, the writer's SIOCOUTQ plus
 * the reader's FIONREAD account for every byte written, and both fall to 0
 * once everything is read (every byte checked); SIOCOUTQNSD never exceeds
 * SIOCOUTQ; a listener's FIONREAD is EINVAL; another descriptor's ioctl
 * passes through untouched.
 *
 * Run by run.sh in a namespace of its own (ctest api_posix_ioctl).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <linux/sockios.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "api_harness.h"

#define WATCHDOG_S 60

static int q_of(int fd, unsigned long req)
{
	int v = -1;

	assert_int_equal(ioctl(fd, req, &v), 0);
	assert_true(v >= 0);
	return v;
}

static void test_fionread_after_readiness(void **state)
{
	uint8_t b[2000];
	uint64_t off = 0;
	int c, s;

	(void)state;
	connect_pair(&c, &s);
	for (int r = 0; r < 300; r++) {
		size_t len = 1 + (size_t)(r * 41) % 1000;
		ssize_t n;
		int avail;

		pat_fill(b, len, 301, off);
		assert_int_equal(write(c, b, len), (ssize_t)len);
		assert_true(wait_fd(s, POLLIN, 5000) & POLLIN);
		avail = q_of(s, FIONREAD);
		n = recv(s, b, sizeof(b), MSG_DONTWAIT);
		if (avail != n)
			fail_msg("round %d: FIONREAD %d right after readiness, the read got %zd", r,
				 avail, n);
		assert_int_equal(n, (ssize_t)len);
		assert_int_equal(pat_check(b, len, 301, off), -1);
		off += len;
		/* a fast receive leaves what it did not take where FIONREAD still finds it */
		if (r % 10 == 0) {
			pat_fill(b, 600, 301, off);
			assert_int_equal(write(c, b, 600), 600);
			assert_true(wait_fd(s, POLLIN, 5000) & POLLIN);
			assert_int_equal(ri2n_recv(s, b, 100, 0), 100);
			assert_int_equal(pat_check(b, 100, 301, off), -1);
			assert_int_equal(q_of(s, FIONREAD), 500);
			assert_int_equal(read(s, b, sizeof(b)), 500);
			assert_int_equal(pat_check(b, 500, 301, off + 100), -1);
			off += 600;
		}
	}
	assert_int_equal(q_of(s, FIONREAD), 0);
	ri2n_close(c);
	ri2n_close(s);
}

/* Polls until the writer's SIOCOUTQ plus the reader's FIONREAD is `total` (5 s at most). */
static void accounts_for(int w, int r, uint64_t total, const char *when)
{
	uint64_t end = now_ms() + 5000;
	int out, in, nsd;

	for (;;) {
		out = q_of(w, SIOCOUTQ);
		nsd = q_of(w, SIOCOUTQNSD);
		in = q_of(r, FIONREAD);
		if (nsd > out)
			fail_msg("%s: SIOCOUTQNSD %d above SIOCOUTQ %d", when, nsd, out);
		if ((uint64_t)out + (uint64_t)in == total)
			return;
		if (now_ms() > end)
			fail_msg("%s: SIOCOUTQ %d + FIONREAD %d = %llu, want %llu written", when, out, in,
				 (unsigned long long)((uint64_t)out + (uint64_t)in),
				 (unsigned long long)total);
		usleep(2000);
	}
}

static void test_outq_and_inq_account(void **state)
{
	static uint8_t b[64 * 1024];
	uint64_t written = 0, got = 0, end;
	int c, s;

	(void)state;
	connect_pair(&c, &s);
	set_nonblock(c, 1);
	/* the peer reads nothing: fill every buffer on the way */
	end = now_ms() + 5000;
	while (now_ms() < end) {
		ssize_t n;

		pat_fill(b, sizeof(b), 302, written);
		n = write(c, b, sizeof(b));
		if (n > 0) {
			written += (uint64_t)n;
			continue;
		}
		assert_true(n < 0 && errno == EAGAIN);
		if (!(wait_fd(c, POLLOUT, 300) & POLLOUT))
			break; /* full: nothing moves any more */
	}
	assert_true(written > 0);
	assert_true(q_of(c, SIOCOUTQ) > 0);
	accounts_for(c, s, written, "the peer not reading");
	/* every byte read and checked; then nothing is left either side */
	while (got < written) {
		ssize_t n;

		assert_true(wait_fd(s, POLLIN, 5000) & POLLIN);
		n = read(s, b, sizeof(b));
		assert_true(n > 0);
		assert_int_equal(pat_check(b, (size_t)n, 302, got), -1);
		got += (uint64_t)n;
	}
	assert_int_equal(got, written);
	accounts_for(c, s, 0, "everything read");
	assert_int_equal(q_of(c, SIOCOUTQNSD), 0);
	ri2n_close(c);
	ri2n_close(s);
}

static void test_listener_and_others(void **state)
{
	uint16_t port;
	int l = make_listener(NULL, 1, &port), p[2], v = -1;

	(void)state;
	expect_fail(ioctl(l, FIONREAD, &v), EINVAL);
	expect_fail(ioctl(l, SIOCOUTQ, &v), EINVAL);
	ri2n_close(l);
	/* not ri2n's: the kernel answers */
	assert_int_equal(pipe(p), 0);
	assert_int_equal(write(p[1], "abc", 3), 3);
	assert_int_equal(ioctl(p[0], FIONREAD, &v), 0);
	assert_int_equal(v, 3);
	close(p[0]);
	close(p[1]);
}

int main(int argc, char **argv)
{
	static const struct CMUnitTest tests[] = {
		HARNESS_TEST(test_fionread_after_readiness),
		HARNESS_TEST(test_outq_and_inq_account),
		HARNESS_TEST(test_listener_and_others),
	};

	harness_init();
	setenv("RI2N_RAILS", "r1,r2", 0);
	setenv("RI2N_EXIT_LINGER_MS", "5000", 0);
	harness_watchdog("posix_ioctl", WATCHDOG_S);
	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests_name("ri2n ioctl", tests, NULL, NULL);
}
