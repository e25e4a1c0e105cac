/* treeread: the floors of scripts/bench-dedupe, at the least CPU per file.
 *
 *   treeread read ROOT N    reads every regular file under ROOT once
 *   treeread stat ROOT N    lstat()s every entry under ROOT
 *
 * N threads share a stack of directories; a thread takes a directory, lists it
 * (getdents through readdir) and stats or reads its entries relative to the
 * directory's descriptor (openat with O_NOFOLLOW, one 1 MiB buffer per thread,
 * plain read() until EOF), pushing subdirectories for any thread to take.
 * Symlinks are never followed. Prints the number of entries (stat) or bytes
 * read (read). Compiled by the harness: cc -O2 -pthread.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static char **stack;
static size_t depth, cap, busy;
static int reading;
static unsigned long long total;

static void push(char *path) {
  if (depth == cap) {
    cap = cap ? cap * 2 : 1024;
    stack = realloc(stack, cap * sizeof *stack);
    if (!stack) { perror("realloc"); exit(2); }
  }
  stack[depth++] = path;
}

static void read_file(int dirfd, const char *name, char *buf) {
  int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC | O_NOATIME);
  if (fd < 0) fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
  if (fd < 0) return;
  ssize_t n;
  unsigned long long got = 0;
  while ((n = read(fd, buf, 1 << 20)) > 0) got += (unsigned long long)n;
  close(fd);
  __atomic_add_fetch(&total, got, __ATOMIC_RELAXED);
}

/* Lists one directory: files read or stat'ed, subdirectories pushed. */
static void visit(char *path, char *buf) {
  int dfd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (dfd < 0) { free(path); return; }
  DIR *d = fdopendir(dfd);
  if (!d) { close(dfd); free(path); return; }
  struct dirent *e;
  unsigned long long entries = 0;
  while ((e = readdir(d))) {
    if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
    unsigned char type = e->d_type;
    if (!reading || type == DT_UNKNOWN) {
      struct stat st;
      if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW)) continue;
      type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
    }
    entries++;
    if (type == DT_DIR) {
      size_t len = strlen(path) + strlen(e->d_name) + 2;
      char *sub = malloc(len);
      if (!sub) { perror("malloc"); exit(2); }
      snprintf(sub, len, "%s/%s", path, e->d_name);
      pthread_mutex_lock(&mu);
      push(sub);
      pthread_cond_signal(&cv);
      pthread_mutex_unlock(&mu);
    } else if (type == DT_REG && reading) {
      read_file(dfd, e->d_name, buf);
    }
  }
  closedir(d);
  free(path);
  if (!reading) __atomic_add_fetch(&total, entries, __ATOMIC_RELAXED);
}

static void *worker(void *arg) {
  (void)arg;
  char *buf = reading ? malloc(1 << 20) : NULL;
  if (reading && !buf) { perror("malloc"); exit(2); }
  for (;;) {
    pthread_mutex_lock(&mu);
    while (!depth && busy) pthread_cond_wait(&cv, &mu);
    if (!depth) {
      pthread_cond_broadcast(&cv);
      pthread_mutex_unlock(&mu);
      break;
    }
    char *path = stack[--depth];
    busy++;
    pthread_mutex_unlock(&mu);
    visit(path, buf);
    pthread_mutex_lock(&mu);
    busy--;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
  }
  free(buf);
  return NULL;
}

int main(int argc, char **argv) {
  int n = argc == 4 ? atoi(argv[3]) : 0;
  if (n < 1 || (strcmp(argv[1], "read") && strcmp(argv[1], "stat"))) {
    fprintf(stderr, "usage: treeread read|stat ROOT THREADS\n");
    return 2;
  }
  reading = !strcmp(argv[1], "read");
  push(strdup(argv[2]));
  pthread_t *t = calloc((size_t)n, sizeof *t);
  for (int i = 0; i < n; i++)
    if (pthread_create(&t[i], NULL, worker, NULL)) { perror("pthread_create"); return 2; }
  for (int i = 0; i < n; i++) pthread_join(t[i], NULL);
  printf("%llu\n", total);
  return 0;
}
