/*
 * libperf-bench: what one read through Linux's libperf costs, in user-space
 * instructions, for `cargo xtask bench` in the arm64 QEMU guest (-icount: exact).
 * Built by xtask (xtask/src/reports/bench.rs) as a static aarch64 binary against libperf.a
 * from linux-source-6.12's tools/lib/perf (-O2, as its Makefile builds it otherwise).
 *
 * Same method as `pmu-demo bench-guest`: a second INST_RETIRED event (the measuring
 * one, user only, read through libperf's mmap fast path) around N and 2N reads of the
 * measured event and around N and 2N empty iterations, each loop the fewest of 5 runs:
 *   per read = ((c(2N) - c(N)) - (e(2N) - e(N))) / N;
 * the `read()` total (measuring event counting the kernel too, whose interrupts land
 * in some reads): minimum over single reads minus minimum over empty iterations.
 * Accuracy: blocks of exactly K nops measured with two perf_evsel__read()s, minus the
 * same around an empty block (minimum of 5 runs each).
 * Output: `RESULT bench path=… per_op=…` and `RESULT accuracy path=… k=… …` lines,
 * the paths named `<prefix>-fast` and `<prefix>-read`; the prefix is the first argument
 * (default `libperf`), one per libperf build.
 */
#include <linux/perf_event.h>
#include <perf/core.h>
#include <perf/evsel.h>
#include <perf/threadmap.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define N 1000

static int quiet(enum libperf_print_level level, const char *fmt, va_list ap)
{
	(void)level; (void)fmt; (void)ap;
	return 0;
}

static struct perf_evsel *open_inst(struct perf_thread_map *threads, int user_read,
				    int exclude_kernel, int map)
{
	struct perf_event_attr attr;
	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_HARDWARE;
	attr.config = PERF_COUNT_HW_INSTRUCTIONS;
	attr.exclude_kernel = exclude_kernel;
	attr.exclude_hv = 1;
	/* arm64: ask for user access (the PMU's `rdpmc` format term, config1:1). */
	attr.config1 = user_read ? 0x2 : 0;
	struct perf_evsel *evsel = perf_evsel__new(&attr);
	if (!evsel || perf_evsel__open(evsel, NULL, threads) != 0)
		return NULL;
	if (map && perf_evsel__mmap(evsel, 0) != 0)
		return NULL;
	return evsel;
}

static inline uint64_t value(struct perf_evsel *evsel)
{
	struct perf_counts_values counts = { 0 };
	perf_evsel__read(evsel, 0, 0, &counts);
	return counts.val;
}

static volatile uint64_t sink;

static __attribute__((noinline)) uint64_t count(struct perf_evsel *meas,
						struct perf_evsel *measured, long n)
{
	uint64_t a = value(meas);
	for (long i = 0; i < n; i++) {
		if (measured)
			sink = value(measured);
		__asm__ volatile("" ::: "memory");
	}
	uint64_t b = value(meas);
	return b - a;
}

/* The fewest instructions of RUNS runs of count() (as pmu-demo bench-guest: an
 * interrupt that sends one run down another path is left out). */
#define RUNS 5
static uint64_t count_min(struct perf_evsel *meas, struct perf_evsel *measured, long n)
{
	uint64_t least = UINT64_MAX;
	for (int run = 0; run < RUNS; run++) {
		uint64_t c = count(meas, measured, n);
		least = c < least ? c : least;
	}
	return least;
}

/* Minimum over single reads minus minimum over empty iterations (as pmu-demo
 * bench-guest: deterministic even when the measuring event counts the kernel too);
 * *mean: over N reads, loop and measuring reads subtracted. */
static double per_op(struct perf_evsel *meas, struct perf_evsel *measured, double *mean)
{
	count(meas, measured, 8);
	count(meas, NULL, 8);
	uint64_t one = UINT64_MAX, none = UINT64_MAX;
	for (int i = 0; i < 64; i++) {
		uint64_t c = count(meas, measured, 1), e = count(meas, NULL, 1);
		one = c < one ? c : one;
		none = e < none ? e : none;
	}
	int64_t c1 = count_min(meas, measured, N), c2 = count_min(meas, measured, 2 * N);
	int64_t e1 = count_min(meas, NULL, N), e2 = count_min(meas, NULL, 2 * N);
	if (mean)
		*mean = (double)((c2 - c1) - (e2 - e1)) / N;
	return (double)one - (double)none;
}

#define BLOCK(k) \
	static __attribute__((noinline)) void block_##k(void) \
	{ __asm__ volatile(".rept " #k "\n\tnop\n\t.endr"); }
BLOCK(1) BLOCK(10) BLOCK(100) BLOCK(1000) BLOCK(10000)
static __attribute__((noinline)) void block_0(void) { __asm__ volatile(""); }

static int64_t min_region(struct perf_evsel *evsel, void (*volatile f)(void))
{
	int64_t best = INT64_MAX;
	for (int run = 0; run < 7; run++) {
		uint64_t a = value(evsel);
		f();
		uint64_t b = value(evsel);
		if (run >= 2 && (int64_t)(b - a) < best)
			best = (int64_t)(b - a);
	}
	return best;
}

static void accuracy(const char *path, struct perf_evsel *evsel)
{
	static const struct { long k; void (*f)(void); } blocks[] = {
		{ 1, block_1 }, { 10, block_10 }, { 100, block_100 },
		{ 1000, block_1000 }, { 10000, block_10000 },
	};
	int64_t empty = min_region(evsel, block_0);
	for (unsigned i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++) {
		int64_t got = min_region(evsel, blocks[i].f) - empty;
		printf("RESULT accuracy path=%s k=%ld measured=%lld error=%lld\n", path,
		       blocks[i].k, (long long)got, (long long)(got - blocks[i].k));
	}
}

int main(int argc, char **argv)
{
	/* The prefix of the paths reported (one harness per libperf build). */
	const char *prefix = argc > 1 ? argv[1] : "libperf";
	char fast_path[64], read_path[64];
	snprintf(fast_path, sizeof(fast_path), "%s-fast", prefix);
	snprintf(read_path, sizeof(read_path), "%s-read", prefix);
	libperf_init(quiet);
	struct perf_thread_map *threads = perf_thread_map__new_dummy();
	if (!threads)
		return 1;
	perf_thread_map__set_pid(threads, 0, 0);
	struct perf_evsel *meas = open_inst(threads, 1, 1, 1);
	struct perf_evsel *fast = open_inst(threads, 1, 1, 1);
	struct perf_evsel *slow = open_inst(threads, 0, 1, 0);
	struct perf_evsel *all = open_inst(threads, 1, 0, 1);
	if (!meas || !fast || !slow) {
		fprintf(stderr, "libperf-bench: cannot open INST_RETIRED with libperf\n");
		return 1;
	}
	perf_evsel__enable(meas);
	perf_evsel__enable(fast);
	perf_evsel__enable(slow);
	struct perf_event_mmap_page *page = perf_evsel__mmap_base(fast, 0, 0);
	int user = page && page->cap_user_rdpmc && page->index;
	double mean;
	double fast_cost = per_op(meas, fast, &mean);
	printf("RESULT bench path=%s per_op=%.3f single_min=%.0f fast=%s\n", fast_path, mean,
	       fast_cost, user ? "true" : "false");
	double slow_cost = per_op(meas, slow, &mean);
	if (all) {
		perf_evsel__enable(all);
		printf("RESULT bench path=%s per_op=%.3f single_min=%.0f total=%.0f\n",
		       read_path, mean, slow_cost, per_op(all, slow, NULL));
	} else {
		printf("RESULT bench path=%s per_op=%.3f single_min=%.0f total=none\n",
		       read_path, mean, slow_cost);
	}
	accuracy(fast_path, fast);
	accuracy(read_path, slow);
	return 0;
}
