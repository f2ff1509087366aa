"""Pure tag choice: semantic versions and constraints, strategies, tag filters, platforms, and
:func:`~argocd_image_updater.policy.select.choose`, which picks a tag and explains the others."""
