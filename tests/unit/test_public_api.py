"""The names the docs promise are exactly what `taskq` exports."""

import taskq

DOCUMENTED = {
    "Actor",
    "ActorConfigDrift",
    "ActorError",
    "ActorImportError",
    "ActorNotFound",
    "ArgumentsMismatch",
    "AsyncClient",
    "Client",
    "ConfigError",
    "DeadReason",
    "DuplicateActor",
    "EnqueuePlan",
    "InvalidDSN",
    "InvalidJobState",
    "Job",
    "JobId",
    "JobContext",
    "JobNotFound",
    "JobState",
    "Middleware",
    "NoCurrentJob",
    "NotJSONSerializable",
    "PayloadError",
    "PayloadTooLarge",
    "PayloadTooDeep",
    "InvalidText",
    "Registry",
    "RetryBackoff",
    "SchemaNotMigrated",
    "Snooze",
    "StoreError",
    "StoreUnavailable",
    "TaskqError",
    "Unique",
    "__version__",
    "current_job",
    # workflows (docs/workflows.md)
    "InvalidWorkflow",
    "Step",
    "StepInfo",
    "StepRef",
    "Workflow",
    "WorkflowInfo",
    "WorkflowNotFound",
    "chain",
    "group",
    "step",
}


def test_exports_are_the_documented_names() -> None:
    assert set(taskq.__all__) == DOCUMENTED
    for name in taskq.__all__:
        assert hasattr(taskq, name), name


def test_every_error_is_a_taskq_error() -> None:
    for name in taskq.__all__:
        obj = getattr(taskq, name)
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert issubclass(obj, taskq.TaskqError), name


def test_client_and_async_client_mirror_each_other() -> None:
    public = {n for n in dir(taskq.AsyncClient) if not n.startswith("_")} - {"store"}
    sync = {n for n in dir(taskq.Client) if not n.startswith("_")}
    assert public - {"__aenter__", "__aexit__"} <= sync
