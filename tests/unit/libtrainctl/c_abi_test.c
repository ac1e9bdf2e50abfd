/* The C ABI compiled as C: the header is C, handles are opaque, errors are codes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trainctl/trainctl.h"

static int failures = 0;
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: expected %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                         \
    }                                                                     \
  } while (0)

static int reduce_calls = 0;
static int fake_reduce(int64_t* vote, size_t len, void* user) {
  (void)vote;
  (void)user;
  reduce_calls++;
  return len == TRAINCTL_VOTE_LEN ? 0 : 1;
}
static int failing_reduce(int64_t* vote, size_t len, void* user) {
  (void)vote;
  (void)len;
  (void)user;
  return 1;
}

/* The library's lines, through trainctl_set_log_fn. */
static char last_line[512];
static int last_level = 0;
static void take_line(int level, const char* line, void* user) {
  (void)user;
  last_level = level;
  snprintf(last_line, sizeof last_line, "%s", line);
}

int main(void) {
  char dir[] = "/tmp/trainctl-cabi-XXXXXX";
  char path[256], kill_path[256], buf[64];
  trainctl_config* cfg = NULL;
  trainctl_ctl* ctl = NULL;
  int rc;

  if (mkdtemp(dir) == NULL) return 2;
  snprintf(path, sizeof path, "%s/state", dir);
  snprintf(kill_path, sizeof kill_path, "%s/KILL", dir);

  EXPECT(trainctl_version() == TRAINCTL_VERSION_NUMBER);
  EXPECT(strcmp(trainctl_strerror(TRAINCTL_EINVAL), "invalid argument or setting") == 0);
  trainctl_destroy(NULL); /* destroy accepts NULL */
  trainctl_config_destroy(NULL);
  EXPECT(trainctl_should_exit(NULL) == TRAINCTL_EINVAL); /* every int-returning call: EINVAL for NULL */
  EXPECT(strstr(trainctl_last_error(), "trainctl_should_exit") != NULL);
  EXPECT(trainctl_should_save(NULL) == TRAINCTL_EINVAL);
  EXPECT(trainctl_check_every(NULL) == TRAINCTL_EINVAL);
  EXPECT(trainctl_check(NULL, 0, NULL, NULL) == TRAINCTL_EINVAL);
  EXPECT(trainctl_set_rank(NULL, 0) == TRAINCTL_EINVAL);
  EXPECT(trainctl_set_deadline(NULL, 0) == TRAINCTL_EINVAL);
  EXPECT(trainctl_config_set(NULL, "a", "b") == TRAINCTL_EINVAL);
  EXPECT(trainctl_create(NULL, NULL) == TRAINCTL_EINVAL);

  EXPECT(trainctl_config_create(&cfg) == TRAINCTL_OK);
  EXPECT(trainctl_config_set(cfg, "poll_interval", "soon") == TRAINCTL_EINVAL);
  EXPECT(strstr(trainctl_last_error(), "poll_interval") != NULL);
  EXPECT(trainctl_config_set(cfg, "bogus", "1") == TRAINCTL_EINVAL);
  EXPECT(trainctl_config_set(cfg, "state_path", path) == TRAINCTL_OK);
  EXPECT(trainctl_config_set(cfg, "kill_switch", kill_path) == TRAINCTL_OK);
  EXPECT(trainctl_config_set(cfg, "signals", "none") == TRAINCTL_OK);
  EXPECT(trainctl_config_set(cfg, "check_every", "2") == TRAINCTL_OK);
  rc = trainctl_config_get(cfg, "check_every", buf, sizeof buf);
  EXPECT(rc == 1 && strcmp(buf, "2") == 0);

  EXPECT(trainctl_create(cfg, &ctl) == TRAINCTL_OK);
  trainctl_config_destroy(cfg);
  EXPECT(trainctl_check_every(ctl) == 2);
  EXPECT(trainctl_should_exit(ctl) == 0);
  EXPECT(trainctl_check(ctl, 0, NULL, NULL) == 0);
  EXPECT(strcmp(trainctl_exit_reason(ctl), "") == 0);
  EXPECT(trainctl_check(ctl, 2, failing_reduce, NULL) == TRAINCTL_EREDUCE);

  fclose(fopen(kill_path, "w"));
  EXPECT(trainctl_set_log_fn(take_line, NULL) == TRAINCTL_OK);
  for (int i = 0; i < 500 && !trainctl_should_exit(ctl); i++) usleep(10000);
  EXPECT(trainctl_should_exit(ctl) == 1);
  EXPECT(trainctl_check(ctl, 1, fake_reduce, NULL) == 0); /* not due: 1 % 2 */
  EXPECT(trainctl_check(ctl, 2, fake_reduce, NULL) == TRAINCTL_EXIT);
  EXPECT(reduce_calls == 1);
  EXPECT(strcmp(trainctl_exit_reason(ctl), "kill-switch") == 0);
  EXPECT(strcmp(last_line, "exit at step 2: kill-switch") == 0 && last_level == 20); /* no prefix, no newline */
  EXPECT(trainctl_set_log_fn(NULL, NULL) == TRAINCTL_OK);
  EXPECT(trainctl_add_switch(ctl, 7, "x", "/x") == TRAINCTL_EINVAL);
  EXPECT(trainctl_set_rank(ctl, -1) == TRAINCTL_EINVAL);
  EXPECT(trainctl_vote(ctl, 0, NULL, 0) == TRAINCTL_EINVAL);
  {
    int64_t v[4];
    EXPECT(trainctl_vote(ctl, 0, v, 4) == TRAINCTL_EINVAL); /* too short */
  }
  /* A committed save, and where to resume: its path, cut to the buffer, full length returned. */
  {
    char ckpt[300], marker[340], where[16];
    unsetenv("WORLD_SIZE");
    unsetenv("SLURM_NTASKS");
    EXPECT(trainctl_saved(NULL, 0, dir) == TRAINCTL_EINVAL);
    EXPECT(trainctl_resume_path(NULL, buf, sizeof buf) == TRAINCTL_EINVAL);
    EXPECT(trainctl_resume_path(dir, buf, sizeof buf) == 0 && buf[0] == '\0'); /* nothing committed */
    snprintf(ckpt, sizeof ckpt, "%s/step_7", dir);
    EXPECT(trainctl_saved(ctl, 7, ckpt) == TRAINCTL_EINVAL); /* not there */
    EXPECT(strstr(trainctl_last_error(), "does not exist; accepted:") != NULL);
    fclose(fopen(ckpt, "w"));
    EXPECT(trainctl_saved(ctl, 7, ckpt) == TRAINCTL_OK);
    rc = trainctl_resume_path(dir, where, sizeof where);
    EXPECT(rc == (int)strlen(ckpt) && strncmp(where, ckpt, sizeof where - 1) == 0 && where[sizeof where - 1] == '\0');
    snprintf(marker, sizeof marker, "%s/.step_7.trainctl-committed.0", dir);
    unlink(marker);
    unlink(ckpt);
  }
  /* The error this rank dies of: NULL refused, a line accepted. */
  EXPECT(trainctl_note_error(NULL, "x") == TRAINCTL_EINVAL);
  EXPECT(trainctl_note_error(ctl, NULL) == TRAINCTL_EINVAL);
  EXPECT(trainctl_note_error(ctl, "RuntimeError: a bug") == TRAINCTL_OK);
  trainctl_destroy(ctl);

  unlink(kill_path);
  rmdir(dir);
  if (failures)
    fprintf(stderr, "%d failures\n", failures);
  else
    printf("c_abi: all checks passed\n");
  return failures ? 1 : 0;
}
