// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/*
 * test_lhist - the latency histogram of mclisten (tools/lhist.h): buckets cover every
 * value once and in order, a bucket is under 1 % of its values wide (2 significant
 * digits), percentiles pick the right bucket and never leave [min, max]. TAP.
 */
#include <stdlib.h>

#include "../tap.h"
#include "lhist.h"

int main(void)
{
	static struct lhist h, h2;
	uint32_t i;
	int bad = 0;

	/* Bucket boundaries: high(i) + 1 starts bucket i + 1; no gap, no overlap. */
	for (i = 0; i + 1 < LHIST_BUCKETS && !bad; i++)
		if (lhist_bucket(lhist_bucket_high(i)) != i ||
		    lhist_bucket(lhist_bucket_high(i) + 1) != i + 1)
			bad = 1;
	CHECK(!bad);
	CHECK_EQ(lhist_bucket(UINT64_MAX), LHIST_BUCKETS - 1);
	CHECK_EQ(lhist_bucket_high(LHIST_BUCKETS - 1), UINT64_MAX);
	/* Width under 1 % above the linear range. */
	bad = 0;
	for (i = LHIST_LINEAR + 1; i < LHIST_BUCKETS && !bad; i++) {
		uint64_t lo = lhist_bucket_high(i - 1) + 1, hi = lhist_bucket_high(i);

		if ((double)(hi - lo + 1) / (double)lo > 0.01)
			bad = 1;
	}
	CHECK(!bad);
	/* Small values are exact. */
	for (i = 1; i <= 100; i++)
		lhist_record(&h, i);
	CHECK_EQ(h.count, 100);
	CHECK_EQ(h.min, 1);
	CHECK_EQ(h.max, 100);
	CHECK_EQ(lhist_percentile(&h, 50), 50);
	CHECK_EQ(lhist_percentile(&h, 90), 90);
	CHECK_EQ(lhist_percentile(&h, 99), 99);
	CHECK_EQ(lhist_percentile(&h, 99.99), 100);
	CHECK_EQ(lhist_percentile(&h, 100), 100);
	/* Large values: within 1 %, never above max. */
	lhist_reset(&h);
	for (i = 0; i < 1000; i++)
		lhist_record(&h, 1000000 + (uint64_t)i * 1000); /* 1 ms .. 1.999 ms */
	{
		uint64_t p50 = lhist_percentile(&h, 50), p999 = lhist_percentile(&h, 99.9);

		CHECK(p50 >= 1499000 && p50 <= 1499000 * 101 / 100);
		CHECK(p999 >= 1998000 && p999 <= 1999000);
		CHECK_EQ(lhist_percentile(&h, 100), 1999000);
	}
	/* One outlier in 10 000 shows in max only: p99.99 is the 9 999th value. */
	lhist_reset(&h);
	for (i = 0; i < 9999; i++)
		lhist_record(&h, 5000);
	lhist_record(&h, 7000000);
	CHECK(lhist_percentile(&h, 99.9) >= 5000 && lhist_percentile(&h, 99.9) <= 5000 * 101 / 100);
	CHECK(lhist_percentile(&h, 99.99) <= 5000 * 101 / 100);
	CHECK_EQ(lhist_percentile(&h, 100), 7000000);
	/* Merging. */
	lhist_record(&h2, 3);
	lhist_add(&h2, &h);
	CHECK_EQ(h2.count, 10001);
	CHECK_EQ(h2.min, 3);
	CHECK_EQ(h2.max, 7000000);
	lhist_reset(&h);
	CHECK_EQ(lhist_percentile(&h, 50), 0);
	return tap_done();
}
