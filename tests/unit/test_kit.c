/*
 * test_kit.c - the test kit's pattern (tools/kit/ri2n_kit.h), which every
 * verified transfer checks its bytes with: the same bytes whatever the cut,
 * and a misplaced, foreign or corrupted byte always counted.
 */
#include "unit_common.h"

enum { N = 4096 };

/* Filling in pieces at any offsets gives the bytes kit_pattern_byte names. */
static void test_kit_pieces(void **state)
{
	static const size_t cuts[] = { 1, 3, 7, 8, 9, 64, 1000 };
	uint8_t whole[N], part[N];

	(void)state;
	kit_pattern_fill(whole, 42, 5, N);
	for (size_t i = 0; i < N; i += 97)
		assert_int_equal(whole[i], kit_pattern_byte(42, 5 + i));
	for (size_t c = 0; c < sizeof(cuts) / sizeof(*cuts); c++) {
		memset(part, 0, sizeof(part));
		for (size_t off = 0; off < N; off += cuts[c]) {
			size_t n = N - off < cuts[c] ? N - off : cuts[c];

			kit_pattern_fill(part + off, 42, 5 + off, n);
			assert_int_equal(kit_pattern_check(part + off, 42, 5 + off, n), 0);
		}
		assert_memory_equal(whole, part, N);
	}
}

/* Wrong bytes are counted one by one; a shift, another seed or a repeat shows. */
static void test_kit_detects(void **state)
{
	uint8_t b[N], other[N];
	uint64_t same = 0;

	(void)state;
	kit_pattern_fill(b, 7, 0, N);
	b[100] ^= 1;
	b[2049] ^= 0x80;
	assert_int_equal(kit_pattern_check(b, 7, 0, N), 2);
	kit_pattern_fill(b, 7, 0, N);
	/* a run delivered one byte late or one word late */
	assert_true(kit_pattern_check(b, 7, 1, N - 1) > (N - 1) / 2);
	assert_true(kit_pattern_check(b, 7, 8, N - 8) > (N - 8) / 2);
	/* the stream of the next seed: differs nearly everywhere, not in one byte of eight */
	kit_pattern_fill(other, 8, 0, N);
	for (size_t i = 0; i < N; i++)
		same += b[i] == other[i];
	assert_true(same < N / 32);
	/* a repeated block: the second copy sits at the wrong offset */
	memcpy(b + 1024, b, 1024);
	assert_true(kit_pattern_check(b, 7, 0, N) > 512);
}

static void test_kit_sizes(void **state)
{
	(void)state;
	assert_true(kit_parse_size("4096") == 4096);
	assert_true(kit_parse_size("64k") == 64 << 10);
	assert_true(kit_parse_size("4MiB") == 4 << 20);
	assert_true(kit_parse_size("1G") == INT64_C(1) << 30);
	assert_true(kit_parse_size("1.5K") == 1536);
	assert_true(kit_parse_size("") < 0);
	assert_true(kit_parse_size("4X") < 0);
	assert_true(kit_parse_size("-1") < 0);
}

static void test_kit_wire(void **state)
{
	uint8_t p[8];

	(void)state;
	kit_put64(p, UINT64_C(0x0102030405060708));
	assert_int_equal(p[0], 1);
	assert_int_equal(p[7], 8);
	assert_true(kit_get64(p) == UINT64_C(0x0102030405060708));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_kit_pieces),
		cmocka_unit_test(test_kit_detects),
		cmocka_unit_test(test_kit_sizes),
		cmocka_unit_test(test_kit_wire),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
