/**
 * The public API of durable-ops: a named export list. Everything not exported here is internal and may
 * change without notice.
 */

// Configuration and runtime
export { ConfigSchema, loadConfig, type Config } from './config.js';
export { createRuntime, createRegistry, lazy, type Runtime, type RuntimeOverrides } from './runtime.js';
export { createPowertoolsLogger, createProcessLogger, loggerOver, SERVICE_NAME, serviceName, silentLogger, type Logger } from './logger.js';
// An application's own task types and recovery modules, which `durable-ops/lambda` and `durable-ops/local` are built from
export { appOverrides, type DurableOpsApp } from './app/durable-ops-app.js';

// Logs and metrics (Powertools: JSON log lines, CloudWatch EMF metrics)
export { MetricName, noopMetrics, type MetricDimensions, type OpsMetrics, type PublishingMetrics } from './observability/metrics.js';
export { createPowertoolsMetrics, METRICS_NAMESPACE, metricsNamespace, PowertoolsMetrics } from './observability/powertools-metrics.js';
export { createObservability, logRedactedEventMiddleware, publishMetricsMiddleware, type Observability } from './observability/observability.js';
export { REDACTED, redactEvent } from './observability/redact-event.js';
export { recordLifecycle, type LifecycleEvent, type LifecycleEventName, type Telemetry } from './observability/lifecycle-events.js';

// Tracing (OpenTelemetry: README "Tracing"); `createObservability` starts it from the environment unless given one
export { startTracing, type Tracing } from './tracing/start-tracing.js';
export { DEFAULT_SERVICE_NAME, tracingSettingsFromEnv, type TracingSettings } from './tracing/tracing-settings.js';
export { flushTracesMiddleware } from './tracing/flush-traces-middleware.js';
export type { TraceFileLine } from './tracing/file-span-exporter.js';

// Errors
export {
  CapacityExhaustedError,
  ConfigError,
  DeadLetterQueueNotConfiguredError,
  ForeignTransactionError,
  DurableOpsError,
  IdempotencyKeyReusedError,
  InvalidTransitionError,
  JobNotFoundError,
  LeaseLostError,
  NotEntitledError,
  OperationNotFoundError,
  OptionalDependencyMissingError,
  RateLimitedError,
  RetryLimitReachedError,
  ScopeViolationError,
  SnapshotNotFoundError,
  SubjectBusyError,
  SecretInEvidenceError,
  StoreConnectionBusyError,
  UnauthorizedError,
  UnknownTaskTypeError,
  ValidationError,
  type ValidationIssue,
} from './errors.js';

// Database
export { openStore, parseDatabaseUrl, type DatabaseTarget, type OpenStoreOptions, type Store } from './db/store.js';
export { migrateAllDown, migrateToLatest, tryMigrateToLatest, type MigrationOutcome, type MigrationReport } from './db/migrate.js';
export {
  createMigrateHandler,
  describeMigrationError,
  MigrateFunctionEventSchema,
  MigrateFunctionResultSchema,
  MigrationResultSchema,
  MIGRATE_ERROR_MAX_LENGTH,
  type MigrateFunctionResult,
  type MigrateHandlerDeps,
} from './db/migrate-function.js';
export { migrateRemote, type MigrateRemoteOptions } from './db/remote-migrate.js';
export { MigrateFunctionError, MigrateInvokeError, MigrateResponseError, MigrationFailedError } from './db/migration-errors.js';
export type { Capabilities, DialectName } from './db/capabilities.js';
export type { AfterCommit, InCallerTransaction } from './db/caller-transaction.js';

// Operations: states, scopes, services, DTOs
export { ALL_STATUSES, OperationStatus, TERMINAL_STATUSES, TRANSITIONS, isTerminal, nextStatus, type OperationEvent } from './operations/lifecycle/operation-status.js';
export { FailureCode } from './operations/lifecycle/failure-code.js';
export { OwnerScope, WorkerScope } from './operations/scopes.js';
export { AdmitRequestSchema, IdempotencyKeySchema, type AdmitRequest } from './operations/admission/admission-schema.js';
export { admitOperation, type Admission, type AdmissionDeps, type AdmitOptions, type TransactionalAdmission } from './operations/admission/admit-operation.js';
export { claimNextOperation, enterOwnerScope, type ClaimableRoutes, type ClaimDeps, type ClaimedOperation } from './operations/lease/claim-operation.js';
export {
  acknowledgeCancel,
  completeOperation,
  failOperation,
  fallBackToExternal,
  recordFailedAttempt,
  type FailureOutcome,
} from './operations/lease/lease-operations.js';
export { heartbeat, type Progress } from './operations/lease/heartbeat.js';
export { attemptOutcome, type AttemptEndKind, type AttemptOutcome, type AttemptOutcomeInput, type FailureKind, type UncancelledOutcome } from './operations/lifecycle/attempt-outcome.js';
export { cancelOperation, retryOperation, type RetryDeps, type TransactionalRetry } from './operations/owner/owner-commands.js';
export { getOperation, listNotifications, listOperations } from './operations/owner/owner-reads.js';
export type { Page } from './paging/page.js';
export { NotificationDtoSchema, OperationDtoSchema, toNotificationDto, toOperationDto, type NotificationDto, type OperationDto } from './operations/owner/operation-dto.js';
export { policyFromConfig, taskPolicy, type OperationPolicy, type TaskPolicy } from './operations/operation-policy.js';
export { retryDelayMs } from './operations/lifecycle/backoff.js';

// Capacity and owner settings
export {
  AdmissionRateSchema,
  capacityPolicy,
  loadCapacityPolicy,
  CapacityFileSchema,
  type AdmissionLimits,
  type AdmissionRate,
  type CapacityFile,
  type CapacityPolicy,
} from './capacity/capacity-policy.js';
export {
  DEFAULT_OWNER_SETTINGS,
  OwnerSettingsDtoSchema,
  OwnerSettingsPatchSchema,
  getOwnSettings,
  isEntitled,
  loadOwnerSettings,
  setOwnerPlan,
  updateOwnSettings,
  type OwnerSettings,
} from './owners/owner-settings.js';
export { PrivacyModeSchema, type PrivacyMode } from './owners/privacy-mode.js';

// Jobs: owner-scoped job postings, the raw text AI features read (never stored in operations)
export { JobLimits } from './jobs/job-limits.js';
export { CreateJobSchema, JobIdSchema, createJob, getJob, type CreateJob } from './jobs/jobs.js';
export { JobDtoSchema, jobUrlOf, toJobDto, type JobDto } from './jobs/job-dto.js';

// AI operations (docs/design.md §5): model providers, local-first routing, circuit breakers, provenance
export { ChatMessageSchema, ChatRequestSchema, ChatResponseSchema, type ChatMessage, type ChatRequest, type ChatResponse } from './models/chat-protocol.js';
export { MODEL_FAILURES, ModelCallError, isRetryableModelFailure, type ModelFailure } from './models/model-errors.js';
export type { ModelCallOptions, ModelProvider } from './models/model-provider.js';
export { createHttpChatProvider, type HttpChatProviderOptions } from './models/http-chat-provider.js';
export { createLambdaChatProvider, parseModelRoute, type LambdaChatProviderOptions, type ModelRouteTarget } from './models/lambda-chat-provider.js';
export { requestStructured } from './models/structured-output.js';
export { CircuitBreaker, type BreakerOptions, type BreakerPermit, type BreakerState } from './ai/circuit-breaker.js';
export { createModelRoutes, type ModelRoute, type ModelRouteOptions, type ModelRoutes } from './ai/model-routes.js';
export { ModelAttemptSchema, parseModelAttempts, type ModelAttempt, type ModelRouteName } from './ai/model-provenance.js';
export type { ModelSession, StructuredRequest } from './ai/model-session.js';
export { externalAllowed } from './ai/route-permits.js';

// strategy.snapshot, the first production AI feature (docs/design.md §7 feature producer)
export { STRATEGY_SNAPSHOT_NOTE_KIND, StrategySnapshotSchema, type StrategySnapshot } from './features/strategy-snapshot/strategy-snapshot-output.js';
export { STRATEGY_SNAPSHOT_TASK_TYPE, strategySnapshotTask } from './features/strategy-snapshot/strategy-snapshot-task.js';
export { readStrategySnapshot, requestStrategySnapshot, type PublishedSnapshot } from './features/strategy-snapshot/strategy-snapshot.js';
export { StrategySnapshotDtoSchema, toStrategySnapshotDto, type StrategySnapshotDto } from './features/strategy-snapshot/strategy-snapshot-dto.js';

// Durable recovery operations (docs/design.md §8)
export { beginDurableRecoveryOperation, BeginRecoverySchema, type BeginRecoveryInput } from './recovery/begin-recovery-operation.js';
export { RecoveryHandle } from './recovery/recovery-handle.js';
export {
  parseUnknownResolution,
  UnknownResolutionSchema,
  VerificationCheckNameSchema,
  type UnknownResolution,
  type Verification,
} from './recovery/unknown-resolution.js';
export { takeOverRecoveryOperation } from './recovery/take-over-recovery-operation.js';
export { verifyAllChains, loadVerifiedChain, type ChainReport } from './recovery/chain-verification.js';
export { EvidenceSchema, parseEvidence, type Evidence } from './recovery/evidence.js';
export {
  EFFECT_CLASSES,
  RECOVERY_STATES,
  TAKEOVER_STATE,
  TERMINAL_RECOVERY_STATES,
  UNRESOLVED_RECOVERY_STATES,
  type EffectClass,
  type RecoveryState,
} from './recovery/recovery-model.js';
export {
  ChainBrokenError,
  IndependentWriteBlockedError,
  InvalidRecoveryMoveError,
  NothingToTakeOverError,
  RecoveryKeyUsedError,
  RecoveryOperationNotFoundError,
  StaleFenceError,
  VerificationRequiredError,
} from './recovery/recovery-errors.js';

export { RecoveryModuleRegistry, createRecoveryModules, type RecoveryModule } from './recovery/recovery-modules.js';
export { listUnresolved, UnresolvedRecoveryDtoSchema, type UnresolvedRecoveryDto } from './recovery/unresolved.js';
export { describeRecoveryOperation, describeRecoveryOperationByKey, type RecoveryDetails } from './recovery/recovery-details.js';

// Durable effects in the product: result objects (compensatable) and DLQ redrive (forward-only)
export { writeResultObject } from './results/write-result-object.js';
export { confirmResultObject } from './results/confirm-result-object.js';
export { compensateResultObject } from './results/compensate-result-object.js';
export { reconcileResultObject } from './results/reconcile-result-object.js';
export { RESULT_OBJECTS_MODULE } from './results/result-object-ledger.js';
export { redriveDeadLetters, REDRIVE_MODULE } from './queue/redrive-dlq.js';
export { reconcileRedrive } from './queue/reconcile-redrive.js';

// Tasks
export {
  defineTask,
  PermanentTaskError,
  RetryableTaskError,
  SubjectNotFoundError,
  type RetryPolicy,
  type TaskCompletion,
  type ExclusiveSubject,
  type TaskContext,
  type TaskDefinition,
  type TaskModelUse,
} from './tasks/task-definition.js';
export { TaskRegistry } from './tasks/task-registry.js';
export { demoWaitTask, DemoWaitParamsSchema } from './tasks/demo-wait.js';

// Handlers (the Lambda entry points build these)
export { createApiHandler, type ApiHandler } from './http/api-handler.js';
export { buildOpenApiDocument, openApiJson, type DocumentAudience, type OpenApiDocument } from './http/openapi.js';
export { createWorkerHandler, processWakeup, type WorkerDeps } from './worker/worker-handler.js';
export { runClaimedOperation, type RunDeps, type RunOutcome } from './worker/run-claimed-operation.js';
export { createSweeperHandler, sweepWith } from './sweeper/sweeper-handler.js';
export { runSweepOnce, type SweepCounts, type SweepDeps } from './sweeper/run-sweep-once.js';

// SQS wake-ups
export { WakeupMessageSchema, parseWakeupMessage, type WakeupMessage } from './queue/wakeup-message.js';
export { SqsWakeupSender, createSqsClient, type WakeupSender, type WakeupSendOptions } from './queue/wakeup-sender.js';

// Local stack
export { startLocalStack, type LocalStack, type LocalStackOptions } from './local/local-stack.js';
export { STAND_IN_MODEL, standInCompletion, startStandInModelServer, type StandInModelServer } from './local/stand-in-model.js';
export { startLocalLambda, type LocalFunction, type LocalLambda } from './local/local-lambda.js';
export { signDevToken, verifyDevToken } from './local/dev-token.js';
export { OPS_READ_SCOPE, OPS_WRITE_SCOPE } from './http/auth.js';
export { operatorRuleFromConfig, type OperatorRule } from './http/operator-identity.js';
export { OwnerUserIdSchema } from './owners/owner-user-id.js';
export { OWNER_ACTOR, assertActor, cliActor, operatorActor, type Actor } from './owners/actor.js';

// The operator surface (`/api/ops/…`, docs/design.md §8): the response schemas the web console validates against
export { OperatorOperationDetailsSchema, OperatorOperationViewSchema, cancelAsOperator, retryAsOperator, type OperatorOperationDetails, type OperatorOperationView } from './operations/operator/operator-operations.js';
export { OperatorOperationPageDtoSchema, type OperatorOperationPageDto } from './http/page-dto.js';
export {
  NotificationViewSchema,
  OperatorOperationDetailSchema,
  getOperationDetailForOperator,
  type NotificationView,
  type OperatorOperationDetail,
} from './operations/operator/operator-operation-detail.js';
export { TIMELINE_KINDS, TimelineEventSchema, timelineKindOf, type TimelineEvent, type TimelineKind } from './operations/operator/operation-timeline.js';
export {
  CapacityPoolViewSchema,
  CapacityViewSchema,
  getCapacityView,
  RunningTotalViewSchema,
  type CapacityPoolView,
  type CapacityView,
  type RunningTotalView,
} from './capacity/capacity-view.js';
export { ThroughputBucketSchema, ThroughputDtoSchema, ThroughputQuerySchema, getThroughput, type ThroughputDto } from './operations/operator/throughput.js';
export { SweepCountsSchema } from './sweeper/sweep-counts.js';
export { SweeperRunDtoSchema, SweeperRunPageDtoSchema, listSweeperRuns, type SweeperRunDto } from './sweeper/sweeper-runs.js';
export { ResolvedRecoveryDtoSchema, resolveUnknownAsOperator, type ResolvedRecoveryDto } from './recovery/resolve-unknown-as-operator.js';
export { RedriveRequestSchema, RedriveResultSchema, redriveAsOperator, type RedriveResult } from './queue/redrive-as-operator.js';
