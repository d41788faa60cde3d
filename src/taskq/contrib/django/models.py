"""No models: taskq's tables are its own (``taskq_migrate``). The module exists because
Django sends ``post_migrate`` only to apps that have one (apps.py)."""
