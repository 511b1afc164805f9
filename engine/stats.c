// SPDX-License-Identifier: GPL-2.0-only OR BSD-2-Clause
/* Drop reason names, histogram quantiles and counter snapshots. */
#include "stats.h"

const char *const drop_reason_name[DROP_NREASONS] = {
	[DROP_RX_ERROR] = "rx_error",
	[DROP_NO_GRH] = "no_grh",
	[DROP_BAD_HEADER] = "bad_header",
	[DROP_UNICAST] = "unicast",
	[DROP_OWN] = "own",
	[DROP_LOOP] = "loop",
	[DROP_PEER] = "peer_bridge",
	[DROP_FOREIGN] = "foreign_source",
	[DROP_UNKNOWN_GROUP] = "unknown_group",
	[DROP_MGID_FORMAT] = "mgid_format",
	[DROP_SENDONLY_SIDE] = "sendonly_side",
	[DROP_NOT_JOINED] = "not_joined",
	[DROP_SIDE_DOWN] = "side_down",
	[DROP_BRIDGING_OFF] = "bridging_off",
	[DROP_INJECTED] = "injected",
	[DROP_TX_FULL] = "tx_full",
	[DROP_TX_ERROR] = "tx_error",
	[DROP_PGM] = "pgm",
	[DROP_TOO_BIG] = "too_big",
};

uint64_t hist_quantile(const struct hist *h, double q)
{
	uint64_t want, seen = 0;

	if (!h->count)
		return 0;
	want = (uint64_t)(q * (double)h->count);
	if (want >= h->count)
		want = h->count - 1;
	for (uint32_t b = 0; b < HIST_BUCKETS; b++) {
		seen += h->b[b];
		if (seen > want) {
			uint64_t v = hist_bucket_low(b);

			return v > h->max ? h->max : v;
		}
	}
	return h->max;
}

void chan_stats_add(struct chan_stats *d, const struct chan_stats *s)
{
	d->rx_pkts += s->rx_pkts;
	d->rx_bytes += s->rx_bytes;
	d->tx_pkts += s->tx_pkts;
	d->tx_bytes += s->tx_bytes;
	d->fwd_pkts += s->fwd_pkts;
	d->standby += s->standby;
	for (int i = 0; i < DROP_NREASONS; i++)
		d->drops[i] += s->drops[i];
	d->rx_starved += s->rx_starved;
	if (s->backlog_max > d->backlog_max)
		d->backlog_max = s->backlog_max;
	d->backlog += s->backlog;
	d->tx_completions += s->tx_completions;
	d->handoff_out += s->handoff_out;
	d->pgm_pkts += s->pgm_pkts;
	d->pgm_not_pgm += s->pgm_not_pgm;
	d->pgm_malformed += s->pgm_malformed;
	d->pgm_bad_csum += s->pgm_bad_csum;
	d->tx_stuck += s->tx_stuck;
}
