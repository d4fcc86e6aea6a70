from oro_assets_tests.tiny_lm import one_torch_thread  # noqa: F401  (autouse in this folder)
