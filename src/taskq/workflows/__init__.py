"""Workflows: steps that run after other steps (docs/workflows.md).

* ``graph``   ``Workflow``, ``Step``, ``step``, ``chain``, ``group``: building a workflow
              and checking it before anything is written (cycles, unknown or foreign
              ``after`` steps, the size limits, arguments against the actor's signature)
* ``plan``    a checked workflow -> the rows the store inserts (no I/O)
* ``model``   plain data: the rows, what ``client.workflow(id)`` returns, the limits
* ``fanout``  steps a running step adds to its own workflow (``current_job().add``)

A step is a job. The order is kept by the store: a step waits, ``queued`` with no run
time yet, until the statement that records the success of its last upstream step makes
it due (store/migrations/<engine>/0007_workflows.sql).

Nothing is imported here: the public names are ``taskq.Workflow``, ``taskq.step``,
``taskq.chain`` and ``taskq.group``, and a worker loads this package only when a step
runs.
"""
