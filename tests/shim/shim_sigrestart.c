/*
 * shim_sigrestart.c - a plain TCP program (it knows nothing of ri2n) whose
 * blocking read() is interrupted, again and again, by a SIGCHLD handler
 * installed with SA_RESTART, as a server reaping its children is.  On a TCP
 * socket the kernel resumes the read after each handler: the program never
 * sees EINTR.  Run under ri2n-run, the same must hold.
 *
 *   shim_sigrestart serve PORT         accepts one connection, reads one
 *                                      byte, waits 700 ms, writes "data",
 *                                      then reads until EOF
 *   shim_sigrestart client ADDR PORT   a SIGCHLD handler with SA_RESTART
 *                                      (reaps, counts); connects, writes one
 *                                      byte, forks 25 children that exit
 *                                      20 ms apart, then one blocking read:
 *                                      it must return the 4 bytes "data"
 *                                      (not EINTR), with at least 10
 *                                      handlers run during it
 *
 * Prints "ok: ..." or "FAIL: ..."; exits 1 on a failure.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define CHILDREN 25

static volatile sig_atomic_t g_chld; /* children reaped by the handler */

static void on_chld(int sig)
{
	int saved = errno;

	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		g_chld++;
	errno = saved;
}

static int fail(const char *what)
{
	printf("FAIL: %s: %s\n", what, strerror(errno));
	return 1;
}

static int serve(int port)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int one = 1, l = socket(AF_INET, SOCK_STREAM, 0), c;
	char b;

	if (l < 0 || setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1))
		return fail("listen");
	c = accept(l, NULL, NULL);
	if (c < 0)
		return fail("accept");
	if (read(c, &b, 1) != 1)
		return fail("read the client's byte");
	usleep(700 * 1000); /* the client's children exit meanwhile */
	if (write(c, "data", 4) != 4)
		return fail("write");
	while (read(c, &b, 1) > 0)
		;
	close(c);
	close(l);
	printf("ok: served\n");
	return 0;
}

static int client(const char *addr, int port)
{
	struct sigaction sa = { .sa_handler = on_chld, .sa_flags = SA_RESTART };
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	int fd = socket(AF_INET, SOCK_STREAM, 0), before;
	char buf[64];
	ssize_t n;

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGCHLD, &sa, NULL))
		return fail("sigaction");
	if (fd < 0 || inet_pton(AF_INET, addr, &a.sin_addr) != 1 ||
	    connect(fd, (struct sockaddr *)&a, sizeof(a)))
		return fail("connect");
	if (write(fd, "g", 1) != 1)
		return fail("write");
	for (int i = 0; i < CHILDREN; i++) {
		pid_t p = fork();

		if (p < 0)
			return fail("fork");
		if (p == 0) {
			usleep((useconds_t)(20 * 1000 * (i + 1)));
			_exit(0);
		}
	}
	before = g_chld;
	n = read(fd, buf, sizeof(buf));
	if (n < 0)
		return fail("the blocking read (SIGCHLD handlers with SA_RESTART ran)");
	if (n != 4 || memcmp(buf, "data", 4) != 0) {
		printf("FAIL: the read returned %zd bytes, not \"data\"\n", n);
		return 1;
	}
	if (g_chld - before < 10) {
		printf("FAIL: only %d SIGCHLD handlers ran during the read\n", (int)(g_chld - before));
		return 1;
	}
	printf("ok: the read returned the data after %d SIGCHLD handlers (SA_RESTART)\n",
	       (int)(g_chld - before));
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && strcmp(argv[1], "serve") == 0)
		return serve(atoi(argv[2]));
	if (argc == 4 && strcmp(argv[1], "client") == 0)
		return client(argv[2], atoi(argv[3]));
	fprintf(stderr, "usage: shim_sigrestart serve PORT | client ADDR PORT\n");
	return 2;
}
