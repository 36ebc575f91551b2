/*
 * ri2n-clock - prints CLOCK_MONOTONIC in seconds, the clock of ri2n-xfer's
 * events and CSV rows (tests/netns/lib.sh: nt_clock lines faults up with them).
 *
 * `ri2n-xfer clock` prints the same, but in a sanitizer build that program
 * starts in ~0.1 s idle and up to a second on a loaded host, which moved
 * the tests' faults and heals by as much: this one is built without a
 * sanitizer and starts in ~2 ms.  Not installed.
 */
#include <stdio.h>
#include <time.h>

int main(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC, &ts) != 0)
		return 1;
	printf("%lld.%06ld\n", (long long)ts.tv_sec, ts.tv_nsec / 1000);
	return 0;
}
