// The names of the environment variables trainctl reads, in one place: a name is written
// once, here, and code reads a variable through env.hpp with one of these
// (scripts/env_home.py fails on a name written as a literal at a read elsewhere). What
// each means to a user is in the docs; the comment here is only where it comes from.
#pragma once

namespace trainctl::env_var {

// SLURM's, set in every job and step (sbatch(1), srun(1) OUTPUT ENVIRONMENT VARIABLES).
inline constexpr char kSlurmdNodename[] = "SLURMD_NODENAME";
inline constexpr char kSlurmArrayJobId[] = "SLURM_ARRAY_JOB_ID";
inline constexpr char kSlurmArrayTaskId[] = "SLURM_ARRAY_TASK_ID";
inline constexpr char kSlurmClusterName[] = "SLURM_CLUSTER_NAME";
inline constexpr char kSlurmConf[] = "SLURM_CONF";
inline constexpr char kSlurmJobId[] = "SLURM_JOB_ID";
inline constexpr char kSlurmJobName[] = "SLURM_JOB_NAME";
inline constexpr char kSlurmJobNumNodes[] = "SLURM_JOB_NUM_NODES";
inline constexpr char kSlurmJobStartTime[] = "SLURM_JOB_START_TIME";
inline constexpr char kSlurmJobUser[] = "SLURM_JOB_USER";
inline constexpr char kSlurmNnodes[] = "SLURM_NNODES";
inline constexpr char kSlurmNodeid[] = "SLURM_NODEID";
inline constexpr char kSlurmNtasks[] = "SLURM_NTASKS";
inline constexpr char kSlurmProcid[] = "SLURM_PROCID";
inline constexpr char kSlurmRestartCount[] = "SLURM_RESTART_COUNT";
inline constexpr char kSlurmStepId[] = "SLURM_STEP_ID";
inline constexpr char kSlurmStepNodelist[] = "SLURM_STEP_NODELIST";
inline constexpr char kSlurmSubmitDir[] = "SLURM_SUBMIT_DIR";

// The launchers': the rank of a process (torchrun, Open MPI, PMIx, PMI).
inline constexpr char kLocalRank[] = "LOCAL_RANK";
inline constexpr char kOmpiCommWorldRank[] = "OMPI_COMM_WORLD_RANK";
inline constexpr char kPmixRank[] = "PMIX_RANK";
inline constexpr char kPmiRank[] = "PMI_RANK";
inline constexpr char kRank[] = "RANK";
inline constexpr char kWorldSize[] = "WORLD_SIZE";

// PyTorch's flight recorder: its buffer (entries), its dump on NCCL's own timeout, where
// a rank reads NCCL's dump requests and writes its dump (TORCH_FR_* in recent torch,
// TORCH_NCCL_DEBUG_INFO_TEMP_FILE in older).
inline constexpr char kTorchFrBufferSize[] = "TORCH_FR_BUFFER_SIZE";
inline constexpr char kTorchFrDumpTempFile[] = "TORCH_FR_DUMP_TEMP_FILE";
inline constexpr char kTorchNcclDebugInfoPipeFile[] = "TORCH_NCCL_DEBUG_INFO_PIPE_FILE";
inline constexpr char kTorchNcclDebugInfoTempFile[] = "TORCH_NCCL_DEBUG_INFO_TEMP_FILE";
inline constexpr char kTorchNcclDumpOnTimeout[] = "TORCH_NCCL_DUMP_ON_TIMEOUT";

// trainctl's own (docs/users.md and docs/admins.md say what each does).
inline constexpr char kTrainctlBadNodes[] = "TRAINCTL_BAD_NODES";
inline constexpr char kTrainctlBadNodeCap[] = "TRAINCTL_BAD_NODE_CAP";
inline constexpr char kTrainctlBadNodeExpiry[] = "TRAINCTL_BAD_NODE_EXPIRY";
inline constexpr char kTrainctlClockSkewMs[] = "TRAINCTL_CLOCK_SKEW_MS";
inline constexpr char kTrainctlEvidenceHome[] = "TRAINCTL_EVIDENCE_HOME";
inline constexpr char kTrainctlLogDir[] = "TRAINCTL_LOG_DIR";
inline constexpr char kTrainctlLogQueries[] = "TRAINCTL_LOG_QUERIES";
inline constexpr char kTrainctlNoLibslurm[] = "TRAINCTL_NO_LIBSLURM";
inline constexpr char kTrainctlNoProgressRuns[] = "TRAINCTL_NO_PROGRESS_RUNS";
inline constexpr char kTrainctlNvmlLibrary[] = "TRAINCTL_NVML_LIBRARY";
inline constexpr char kTrainctlRunDir[] = "TRAINCTL_RUN_DIR";
inline constexpr char kTrainctlRunEventsDir[] = "TRAINCTL_RUN_EVENTS_DIR";
inline constexpr char kTrainctlSaveTimesDir[] = "TRAINCTL_SAVE_TIMES_DIR";
inline constexpr char kTrainctlSendmail[] = "TRAINCTL_SENDMAIL";
inline constexpr char kTrainctlShmDir[] = "TRAINCTL_SHM_DIR";
inline constexpr char kTrainctlStackSignal[] = "TRAINCTL_STACK_SIGNAL";
inline constexpr char kTrainctlState[] = "TRAINCTL_STATE";
inline constexpr char kTrainctlStateFd[] = "TRAINCTL_STATE_FD";
inline constexpr char kTrainctlStragglerAgreements[] = "TRAINCTL_STRAGGLER_AGREEMENTS";
inline constexpr char kTrainctlSupervisorPid[] = "TRAINCTL_SUPERVISOR_PID";

// trainwatch's (docs/watchdogs.md).
inline constexpr char kTrainwatchSmtpHost[] = "TRAINWATCH_SMTP_HOST";
inline constexpr char kTrainwatchSmtpPassword[] = "TRAINWATCH_SMTP_PASSWORD";
inline constexpr char kTrainwatchStateDir[] = "TRAINWATCH_STATE_DIR";

// The user's session (XDG Base Directory, login).
inline constexpr char kHome[] = "HOME";
inline constexpr char kUser[] = "USER";
inline constexpr char kXdgRuntimeDir[] = "XDG_RUNTIME_DIR";
inline constexpr char kXdgStateHome[] = "XDG_STATE_HOME";

// Where a process's rank number comes from, first set wins: the launcher's variables, then
// SLURM's own task number (`srun python3 train.py`, one process per task).
inline constexpr const char* kRankVariables[] = {kRank, kOmpiCommWorldRank, kPmixRank, kPmiRank, kSlurmProcid};

}  // namespace trainctl::env_var
