"""The registry a Django project's workers serve: ``taskq.contrib.django.actors:registry``.

Importing this module sets Django up first (``django.setup()``, from
``DJANGO_SETTINGS_MODULE``) when nothing did yet: so a worker process, a workgroup's
children and a CPU pool's processes can all import it as their ``--actors`` and find the
ORM ready. ``registry`` is ``settings.TASKQ['ACTORS']`` when given, else every
``taskq.Registry`` found in the ``tasks`` module of an installed app (``myapp/tasks.py``),
merged in ``INSTALLED_APPS`` order (``discover()``).
"""

from __future__ import annotations

from importlib import import_module
from importlib.util import find_spec

from ...exceptions import ConfigError
from ...registry import Registry, load_registry
from . import conf


def setup() -> None:
    """``django.setup()`` unless the app registry is ready already."""
    import django
    from django.apps import apps

    if not apps.ready:
        django.setup()


def discover() -> Registry:
    """Every ``taskq.Registry`` in the installed apps' ``tasks`` modules, as one."""
    from django.apps import apps

    found: list[Registry] = []
    for app in apps.get_app_configs():
        name = f"{app.name}.tasks"
        if find_spec(name) is None:
            continue
        module = import_module(name)
        for value in vars(module).values():
            if isinstance(value, Registry) and all(value is not r for r in found):
                found.append(value)
    if not found:
        raise ConfigError(
            "no taskq.Registry in the tasks modules of INSTALLED_APPS: define one in an "
            "app's tasks.py (registry = taskq.Registry()), or set settings.TASKQ['ACTORS']"
        )
    if len(found) == 1:
        return found[0]
    inits = [r.initializer for r in found if r.initializer is not None]

    def initializer() -> None:
        for init in inits:
            init()

    merged = Registry(initializer=initializer if inits else None)
    for one in found:
        merged.include(one)
    return merged


def load() -> Registry:
    """The project's registry: ``settings.TASKQ['ACTORS']``, else ``discover()``."""
    setup()
    settings = conf.load()
    return load_registry(settings.actors) if settings.actors else discover()


registry = load()
