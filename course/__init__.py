"""What student notebooks import: checks, fixture loading, models, data, views, environment.

Shipped to students whole (``make publish``); it imports nothing from the instructor package
``staff``. Importing it applies the hub mode first (:func:`course.settings.apply_hub_mode`), so
``HF_HUB_OFFLINE`` is set before any module here imports ``transformers``.
"""

from course import settings as _settings

_settings.apply_hub_mode()
