import pytest

from oro_assets_tests.tiny_lm import one_torch_thread  # noqa: F401  (autouse in this folder)


@pytest.fixture(scope="session")
def world():
    from oro_assets.arena.generator import build_world

    return build_world(7, n_problems=40, n_products=400, variant_share=0.0)


@pytest.fixture(scope="session")
def product_problems(world):
    return [p for p in world.problems if p["category"] == "Product"][:3]

