/*
 * hddsim: a simulated spinning disk for benchmarks.
 *
 * A tiny FUSE filesystem that exposes one file, /disk, backed by an image
 * file. Every read and write of /disk is served from the image and then
 * delayed by a simple model of a single-actuator hard drive. Attach it with
 * `losetup` and put btrfs/XFS on the loop device to get a block device whose
 * service time depends on head travel.
 *
 * Model (one head, requests served strictly one at a time in arrival order;
 * run the daemon single-threaded with -s):
 *
 *   sequential request (offset == end of the previous request):
 *       t = len / rate
 *   any other request:
 *       t = settle + (full_stroke - settle) * sqrt(|offset - head| / capacity)
 *           + rotational latency (half a revolution: 30000 / rpm ms)
 *           + len / rate
 *
 * The reply is sent no earlier than arrival + t (absolute deadline, so the
 * real I/O on the image overlaps the simulated time instead of adding to it).
 *
 * Parameters (environment variables, defaults resemble a 7200 rpm SATA drive):
 *   HDDSIM_RPM            7200     rotational latency = half a revolution
 *   HDDSIM_SETTLE_MS      1.0      shortest seek (track to track + settle)
 *   HDDSIM_FULL_STROKE_MS 15.0     seek across the whole capacity
 *   HDDSIM_MBPS           150      media transfer rate, MB/s (10^6 bytes)
 *   HDDSIM_CAPACITY       size of the image, bytes: the span a full stroke
 *                         covers (set it larger to model a dataset that
 *                         occupies only part of a big disk)
 *
 * A second file, /stats, reads back counters as "key value" lines:
 * requests, sequential requests, bytes and simulated busy time.
 *
 * Usage: hddsim IMAGE MOUNTPOINT [FUSE options, e.g. -f -s]
 * Build: cc -O2 -o hddsim hddsim.c $(pkg-config --cflags --libs fuse3) -lm
 */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <fuse.h>

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define STATS_SIZE 4096

static int image_fd = -1;
static off_t image_size;

/* Model parameters, in nanoseconds and bytes. */
static double settle_ns, full_stroke_ns, half_rev_ns, ns_per_byte, capacity;

/* Head state and counters. One FUSE thread, so no locking. */
static uint64_t head = 0; /* byte offset just after the last request */
static uint64_t n_requests, n_sequential, n_read_bytes, n_write_bytes;
static double busy_ns;

static double env_double(const char *name, double dflt)
{
	const char *v = getenv(name);
	return v && *v ? strtod(v, NULL) : dflt;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

/* Service time of one request under the model; moves the head. */
static double service_ns(uint64_t off, uint64_t len)
{
	double t = len * ns_per_byte;

	n_requests++;
	if (off == head) {
		n_sequential++;
	} else {
		double dist = fabs((double)off - (double)head) / capacity;
		if (dist > 1.0)
			dist = 1.0;
		t += settle_ns + (full_stroke_ns - settle_ns) * sqrt(dist) + half_rev_ns;
	}
	head = off + len;
	busy_ns += t;
	return t;
}

static void sleep_until(uint64_t deadline)
{
	struct timespec ts = { deadline / 1000000000ull, deadline % 1000000000ull };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
		;
}

static int format_stats(char *buf)
{
	int n = snprintf(buf, STATS_SIZE,
			 "requests %llu\nsequential %llu\nread_bytes %llu\n"
			 "write_bytes %llu\nbusy_ms %.3f\n",
			 (unsigned long long)n_requests, (unsigned long long)n_sequential,
			 (unsigned long long)n_read_bytes, (unsigned long long)n_write_bytes,
			 busy_ns / 1e6);
	memset(buf + n, ' ', STATS_SIZE - n); /* fixed size; pad with blanks */
	buf[STATS_SIZE - 1] = '\n';
	return STATS_SIZE;
}

static void *sim_init(struct fuse_conn_info *conn, struct fuse_config *cfg)
{
	(void)conn;
	cfg->direct_io = 1; /* no page cache in FUSE: every I/O reaches the model */
	cfg->attr_timeout = 3600;
	cfg->entry_timeout = 3600;
	return NULL;
}

static int sim_getattr(const char *path, struct stat *st, struct fuse_file_info *fi)
{
	(void)fi;
	memset(st, 0, sizeof(*st));
	if (strcmp(path, "/") == 0) {
		st->st_mode = S_IFDIR | 0755;
		st->st_nlink = 2;
	} else if (strcmp(path, "/disk") == 0) {
		st->st_mode = S_IFREG | 0600;
		st->st_nlink = 1;
		st->st_size = image_size;
	} else if (strcmp(path, "/stats") == 0) {
		st->st_mode = S_IFREG | 0444;
		st->st_nlink = 1;
		st->st_size = STATS_SIZE;
	} else {
		return -ENOENT;
	}
	return 0;
}

static int sim_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
		       struct fuse_file_info *fi, enum fuse_readdir_flags flags)
{
	(void)off, (void)fi, (void)flags;
	if (strcmp(path, "/") != 0)
		return -ENOENT;
	fill(buf, ".", NULL, 0, 0);
	fill(buf, "..", NULL, 0, 0);
	fill(buf, "disk", NULL, 0, 0);
	fill(buf, "stats", NULL, 0, 0);
	return 0;
}

static int sim_open(const char *path, struct fuse_file_info *fi)
{
	if (strcmp(path, "/disk") != 0 && strcmp(path, "/stats") != 0)
		return -ENOENT;
	fi->direct_io = 1;
	return 0;
}

static int sim_read(const char *path, char *buf, size_t len, off_t off,
		    struct fuse_file_info *fi)
{
	(void)fi;
	if (strcmp(path, "/stats") == 0) {
		char s[STATS_SIZE];
		format_stats(s);
		if (off >= STATS_SIZE)
			return 0;
		if (len > (size_t)(STATS_SIZE - off))
			len = STATS_SIZE - off;
		memcpy(buf, s + off, len);
		return len;
	}
	if (off >= image_size)
		return 0;
	if ((off_t)len > image_size - off)
		len = image_size - off;
	uint64_t deadline = now_ns() + (uint64_t)service_ns(off, len);
	ssize_t n = pread(image_fd, buf, len, off);
	if (n < 0)
		return -errno;
	n_read_bytes += n;
	sleep_until(deadline);
	return n;
}

static int sim_write(const char *path, const char *buf, size_t len, off_t off,
		     struct fuse_file_info *fi)
{
	(void)fi;
	if (strcmp(path, "/disk") != 0)
		return -EACCES;
	if (off >= image_size)
		return -ENOSPC;
	if ((off_t)len > image_size - off)
		len = image_size - off;
	uint64_t deadline = now_ns() + (uint64_t)service_ns(off, len);
	ssize_t n = pwrite(image_fd, buf, len, off);
	if (n < 0)
		return -errno;
	n_write_bytes += n;
	sleep_until(deadline);
	return n;
}

/* Flushes are not modelled: data reaches the image's host page cache. */
static int sim_fsync(const char *path, int datasync, struct fuse_file_info *fi)
{
	(void)path, (void)datasync, (void)fi;
	return 0;
}

static const struct fuse_operations sim_ops = {
	.init = sim_init,
	.getattr = sim_getattr,
	.readdir = sim_readdir,
	.open = sim_open,
	.read = sim_read,
	.write = sim_write,
	.fsync = sim_fsync,
};

int main(int argc, char *argv[])
{
	if (argc < 3) {
		fprintf(stderr, "usage: %s IMAGE MOUNTPOINT [FUSE options]\n", argv[0]);
		return 2;
	}
	image_fd = open(argv[1], O_RDWR);
	if (image_fd < 0) {
		perror(argv[1]);
		return 1;
	}
	struct stat st;
	if (fstat(image_fd, &st) < 0) {
		perror("fstat");
		return 1;
	}
	image_size = st.st_size;

	settle_ns = env_double("HDDSIM_SETTLE_MS", 1.0) * 1e6;
	full_stroke_ns = env_double("HDDSIM_FULL_STROKE_MS", 15.0) * 1e6;
	half_rev_ns = 30000.0 / env_double("HDDSIM_RPM", 7200) * 1e6;
	ns_per_byte = 1e9 / (env_double("HDDSIM_MBPS", 150) * 1e6);
	capacity = env_double("HDDSIM_CAPACITY", (double)image_size);
	if (capacity <= 0)
		capacity = 1;
	fprintf(stderr,
		"hddsim: %s, %lld bytes; settle %.2f ms, full stroke %.2f ms, "
		"rotational %.2f ms, %.0f MB/s, capacity %.0f bytes\n",
		argv[1], (long long)image_size, settle_ns / 1e6, full_stroke_ns / 1e6,
		half_rev_ns / 1e6, 1e3 / ns_per_byte, capacity);

	/* FUSE sees argv without the image: prog MOUNTPOINT [options]. */
	argv[1] = argv[0];
	return fuse_main(argc - 1, argv + 1, &sim_ops, NULL);
}
