/* trainctl's stable C ABI: the flags a training loop polls.
 *
 *   trainctl_ctl *ctl;
 *   if (trainctl_create(NULL, &ctl) != TRAINCTL_OK)        // NULL: configure from the environment
 *     fprintf(stderr, "%s\n", trainctl_last_error());
 *   for (int64_t step = 0;; ++step) {
 *     train_step();
 *     int d = trainctl_check(ctl, step, my_allreduce_max, comm);  // agreed on every rank
 *     if (d < 0) ...;                                              // error code
 *     if (d & TRAINCTL_SAVE) save_checkpoint(step);
 *     if (d & TRAINCTL_EXIT) {                                     // trainctl_exit_reason(ctl) says why
 *       if (!(d & TRAINCTL_SAVED)) save_checkpoint(step);
 *       break;
 *     }
 *   }
 *   trainctl_destroy(ctl);
 *
 * Contract: handles are opaque; every *_destroy accepts NULL; no function throws or
 * aborts on bad input: each returns a negative TRAINCTL_E* code, and
 * trainctl_last_error() gives the one-line reason for the calling thread. New options
 * come as new keys for trainctl_config_set, never as a changed struct layout.
 * Settings and the environment variables behind them: see trainctl/controller.hpp.
 */
#ifndef TRAINCTL_H
#define TRAINCTL_H

#include <stddef.h>
#include <stdint.h>

#if defined(TRAINCTL_BUILDING)
#define TRAINCTL_EXPORT __attribute__((visibility("default")))
#else
#define TRAINCTL_EXPORT
#endif

#ifdef __cplusplus
extern "C" {
#endif

#define TRAINCTL_VERSION_MAJOR 0
#define TRAINCTL_VERSION_MINOR 1
#define TRAINCTL_VERSION_PATCH 0
#define TRAINCTL_VERSION_NUMBER (TRAINCTL_VERSION_MAJOR * 10000 + TRAINCTL_VERSION_MINOR * 100 + TRAINCTL_VERSION_PATCH)

/* Return codes. */
#define TRAINCTL_OK 0
#define TRAINCTL_EINVAL (-1)  /* a bad argument or setting: see trainctl_last_error() */
#define TRAINCTL_ESYSTEM (-2) /* a system call failed */
#define TRAINCTL_ENOMEM (-3)
#define TRAINCTL_EREDUCE (-4) /* the reduce callback reported failure */
#define TRAINCTL_EINTERNAL (-5)

/* Decision bits returned by trainctl_check / trainctl_decide; test each with &, as
 * later versions may add bits. TRAINCTL_SAVED comes with TRAINCTL_EXIT only: what there
 * is to keep is saved already, so exit without a save ("no-progress": nothing is new
 * since the checkpoint; or a supervisor went away during the save the ranks just made,
 * and that save is the last). */
#define TRAINCTL_EXIT 1
#define TRAINCTL_SAVE 2
#define TRAINCTL_SAVED 4

/* Elements of the vote vector that trainctl_check reduces with MAX across ranks. */
#define TRAINCTL_VOTE_LEN 24

/* Switch kinds for trainctl_add_switch. */
#define TRAINCTL_SWITCH_EXIT 1
#define TRAINCTL_SWITCH_SAVE 2

typedef struct trainctl_config trainctl_config;
typedef struct trainctl_ctl trainctl_ctl;

/* The library's TRAINCTL_VERSION_NUMBER, to compare with the header's. */
TRAINCTL_EXPORT int trainctl_version(void);
TRAINCTL_EXPORT const char* trainctl_strerror(int code);
/* The last failure of this thread, one line; "" when none. */
TRAINCTL_EXPORT const char* trainctl_last_error(void);

/* Where the library's lines go (a decision, a refused setting, a straggler): by default
 * standard error, as "trainctl: LINE". With a function, each LINE (without the prefix and
 * the newline) and its level (20 info: an exit or save decided; 30 warning) go to it,
 * from any of the library's threads, never from a signal handler. NULL: standard error
 * again. `fn` must stay callable while any controller exists (a line being written when
 * it changes may still reach the old one). The Python package sends them to the logger
 * "trainctl". */
typedef void (*trainctl_log_fn)(int level, const char* line, void* user);
TRAINCTL_EXPORT int trainctl_set_log_fn(trainctl_log_fn fn, void* user);

/* The run's id, the same in every task of a job array and every requeue of a job (for
 * a logger's run id: W&B, MLflow, TensorBoard): TRAINCTL_RUN_ID when set to 1-64 of
 * [A-Za-z0-9_.-] (the supervisor of the job's batch script sets it to
 * <SLURM_CLUSTER_NAME>-<SLURM_ARRAY_JOB_ID or SLURM_JOB_ID>-<the array's submit time, UTC,
 * 20261202T152554>), else the same without the time; "" outside a SLURM job. Copies it
 * into buf (always NUL-terminated); returns its length. */
TRAINCTL_EXPORT int trainctl_run_id(char* buf, size_t len);

/* A configuration read from the environment (malformed values are reported on stderr
 * and fall back to documented defaults). */
TRAINCTL_EXPORT int trainctl_config_create(trainctl_config** out);
TRAINCTL_EXPORT void trainctl_config_destroy(trainctl_config* cfg);
TRAINCTL_EXPORT int trainctl_config_set(trainctl_config* cfg, const char* key, const char* value);
/* Copies the value's text into buf (always NUL-terminated); returns its full length. */
TRAINCTL_EXPORT int trainctl_config_get(const trainctl_config* cfg, const char* key, char* buf, size_t len);

/* cfg may be NULL: configured from the environment. Starts the node's publisher (or takes part in electing one). */
TRAINCTL_EXPORT int trainctl_create(const trainctl_config* cfg, trainctl_ctl** out);
TRAINCTL_EXPORT void trainctl_destroy(trainctl_ctl* ctl);

/* Every function that returns int returns TRAINCTL_EINVAL for a NULL handle (and
 * trainctl_last_error() says which); those returning a string return "", and
 * trainctl_stat_calls 0. */

/* This process's view, no agreement: 1 or 0. A few atomic loads. */
TRAINCTL_EXPORT int trainctl_should_exit(const trainctl_ctl* ctl);
/* 1 once per touch of a save switch (consumed by the call), else 0. */
TRAINCTL_EXPORT int trainctl_should_save(trainctl_ctl* ctl);

/* Reduces `vote` (TRAINCTL_VOTE_LEN elements) with MAX across all ranks, in place.
 * Returns 0 on success, non-zero on failure. */
typedef int (*trainctl_reduce_fn)(int64_t* vote, size_t len, void* user);

/* The agreed decision at a step boundary: TRAINCTL_EXIT and/or TRAINCTL_SAVE bits, or a
 * negative code. With reduce == NULL (no agreement) every step decides from this
 * process's view, and each touch of a save switch is one save here, however the steps
 * fall; with a reduce callback every check_every steps do, all ranks alike, and the
 * others return only a sticky exit. */
TRAINCTL_EXPORT int trainctl_check(trainctl_ctl* ctl, int64_t step, trainctl_reduce_fn reduce, void* user);
/* The halves of trainctl_check for callers that reduce on their own. trainctl_vote
 * returns 1 when an agreement is due at this step (check_every), 0 when not. */
TRAINCTL_EXPORT int trainctl_vote(trainctl_ctl* ctl, int64_t step, int64_t* vote, size_t len);
TRAINCTL_EXPORT int trainctl_decide(trainctl_ctl* ctl, int64_t step, const int64_t* reduced, size_t len);
/* Why: "kill-switch", "deadline", "preempted", "memory", "hang", "peer-failed", "signal",
 * "no-progress" (the run resumed where the array's last runs failed: exit without a save)
 * or a user switch's name; "" when no exit (save) was decided. Valid until the next call on ctl. */
TRAINCTL_EXPORT const char* trainctl_exit_reason(const trainctl_ctl* ctl);
TRAINCTL_EXPORT const char* trainctl_save_reason(const trainctl_ctl* ctl);

/* The rank's own compute in a step (forward and backward, not the collectives that
 * wait for other ranks): the straggler finding compares marked time when steps are
 * marked, and wall time between agreements otherwise. Thread-safe, no system call. */
TRAINCTL_EXPORT int trainctl_compute_begin(trainctl_ctl* ctl);
TRAINCTL_EXPORT int trainctl_compute_end(trainctl_ctl* ctl);

/* A phase of the loop other than training ("eval", or "save" for the loop's own save):
 * a quiet rank inside it is judged by the phase's own hang budget, not --hang-timeout.
 * Mark it on every rank, including ranks that only wait for it. Phases nest; end closes
 * the innermost. TRAINCTL_EINVAL for a name that is not 1-31 of [A-Za-z0-9_.-] (not
 * starting with '.' or '-') or an end without an open phase. Not thread-safe: the
 * loop's thread. */
TRAINCTL_EXPORT int trainctl_phase_begin(trainctl_ctl* ctl, const char* name);
TRAINCTL_EXPORT int trainctl_phase_end(trainctl_ctl* ctl);

/* Committed saves. After this rank's files of the save at `step` are in place, it says
 * so: `path` is the checkpoint's directory, or its file, this user's and no link (a name
 * written once: the step in it). Every rank calls it, also ranks that wrote nothing
 * themselves, once the files they wait for are there. A small marker per rank goes
 * inside the directory (.trainctl-committed.RANK) or beside the file
 * (.NAME.trainctl-committed.RANK), naming the step, the world, the run, the attempt (job
 * and requeue) and the checkpoint, and the supervisor records which ranks committed.
 * TRAINCTL_EINVAL for a path that is not such a checkpoint; TRAINCTL_ESYSTEM when the
 * marker cannot be written (a directory or another user's file in its place): the
 * library logs the line, the save is not committed, and the loop may train on. */
TRAINCTL_EXPORT int trainctl_saved(trainctl_ctl* ctl, int64_t step, const char* path);
/* An asynchronous save: this rank's part of the save at `step` goes on being written at
 * `path` after the call (DCP's async_save, a writer thread). Call it from the loop's
 * thread as the write is handed off; it returns a ticket (> 0) or a negative code. The
 * write is pending until trainctl_save_end(ctl, ticket, error), from any thread: with
 * error NULL the write completed and this rank's part is committed then (returns 1; 0
 * when its marker cannot be written, said in the log), never before; with an error's
 * text nothing is committed and one line names the save and the error (returns 0). The
 * save counts from its start (the decision to save, or the loop's "save" phase) to its
 * commit: --graceful-exit=auto, the report and the hang clock see its whole write. A
 * marker of this rank already at `path` is removed at once: a save redone in place is
 * uncommitted until its own commit. */
TRAINCTL_EXPORT int64_t trainctl_save_begin(trainctl_ctl* ctl, int64_t step, const char* path);
/* A save of this rank begins at `path`, to be committed with trainctl_saved once written
 * (a framework that says only afterwards that it saved): this rank's marker already at
 * `path` goes now, so a save redone in place is uncommitted until then. */
TRAINCTL_EXPORT int trainctl_save_starts(trainctl_ctl* ctl, const char* path);
TRAINCTL_EXPORT int trainctl_save_end(trainctl_ctl* ctl, int64_t ticket, const char* error);
/* Waits for this rank's pending writes: at most timeout_s (< 0: no bound of its own) and
 * never past 2 s before the job's end that the supervisor knows, so that a write the end
 * will cut is said in the log before it is cut (and is not committed). Logs how long it
 * waited. Returns how many writes are still pending, or a negative code.
 * trainctl_destroy waits the same way first: a rank does not end while its own writes
 * are pending. trainctl_pending_saves: how many are pending now. */
TRAINCTL_EXPORT int trainctl_wait_saves(trainctl_ctl* ctl, double timeout_s);
TRAINCTL_EXPORT int trainctl_pending_saves(const trainctl_ctl* ctl);
/* A snapshot of this rank's state at `step`: `size` bytes copied into host memory on
 * the node (two slots per rank in the node state's private directory, a tmpfs), never
 * written to a file system while the rank lives. When a rank of the task dies (an
 * exception, a signal, the launcher ending it after a peer died, --hang-action=end-step),
 * the node's supervisor writes each of its ranks' two newest snapshots into `ckpt_dir`
 * (absolute) as saves: ckpt_dir/snapshot-STEP/rank-RANK.snapshot, committed rank by rank
 * as trainctl_saved commits, unless a save as new is committed there already; so
 * trainctl_resume_path counts them like any save. The file holds the bytes as given.
 * TRAINCTL_OK when kept; TRAINCTL_ESYSTEM when not (no supervisor on this node to write
 * it out, or no memory for it: the library logs one line the first time, and the
 * snapshot before stays kept); TRAINCTL_EINVAL for a negative step or a relative path. */
TRAINCTL_EXPORT int trainctl_snapshot(trainctl_ctl* ctl, int64_t step, const void* data, size_t size,
                                      const char* ckpt_dir);
/* Where to resume: the checkpoint in `dir` with the highest step that every rank of its
 * world committed with trainctl_saved, never a half-written one, a link or another
 * user's file. Copies its path into buf (always NUL-terminated) and returns its length;
 * 0 when there is none or `dir` does not exist (a fresh start); TRAINCTL_ESYSTEM when
 * `dir` cannot be read, or is a link another user made. When `dir` holds saves it cannot
 * trust (no marker, not every rank's, redone in place, copied), rank 0 logs one line:
 * how many, and why. No controller is needed. */
TRAINCTL_EXPORT int trainctl_resume_path(const char* dir, char* buf, size_t len);

/* The error this rank is about to die of (an uncaught exception's last line, "what():"
 * of a C++ one): its first line, as printable ASCII of at most 200 characters, goes into
 * the rank's heartbeat slot, where the supervisor's crash finding, the task's log and
 * `trainctl report` name it when this rank is the first to die. The first call counts;
 * a rank whose node state is not open records nothing. The Python package calls it from
 * its excepthook. TRAINCTL_EINVAL for NULL. */
TRAINCTL_EXPORT int trainctl_note_error(trainctl_ctl* ctl, const char* text);

TRAINCTL_EXPORT int trainctl_set_deadline(trainctl_ctl* ctl, double unix_seconds);
TRAINCTL_EXPORT int trainctl_add_switch(trainctl_ctl* ctl, int kind, const char* name, const char* path);
TRAINCTL_EXPORT int trainctl_set_rank(trainctl_ctl* ctl, int rank);
TRAINCTL_EXPORT int trainctl_check_every(const trainctl_ctl* ctl);
TRAINCTL_EXPORT const char* trainctl_state_path(const trainctl_ctl* ctl);
/* Metadata requests (stat calls) made by this node's publishers so far. */
TRAINCTL_EXPORT uint64_t trainctl_stat_calls(const trainctl_ctl* ctl);

#ifdef __cplusplus
}
#endif

#endif /* TRAINCTL_H */
