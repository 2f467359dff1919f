"""Record types of the Recipes domain (paper Table 7; Appendix C.2).

Collection: ``recipes/recipes``, the recipes the user's recipe source can find.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from mempa_tui.world.records import Record

__all__ = ["DIETARY_TAGS", "DietaryTag", "Recipe", "RecipeIngredient"]

#: Dietary labels a recipe may carry (and recipe_search may filter by).
DietaryTag = Literal[
    "vegetarian", "vegan", "pescatarian", "gluten-free", "dairy-free", "nut-free", "egg-free", "low-sugar"
]
DIETARY_TAGS: tuple[str, ...] = DietaryTag.__args__  # type: ignore[attr-defined]


class RecipeIngredient(BaseModel):
    """One ingredient line of a recipe (a bare number as quantity is read as text: 3 -> '3')."""

    model_config = ConfigDict(extra="forbid", coerce_numbers_to_str=True)

    name: str = Field(description="The ingredient, e.g. 'plain flour'.")
    quantity: str = Field(default="", description="Amount as written, e.g. '200 g' or '2 tbsp'.")


class Recipe(Record):
    """A recipe (collection ``recipes/recipes``)."""

    title: str
    cuisine: str = ""
    course: str = Field(default="", description="e.g. 'main', 'dessert', 'side', 'breakfast'.")
    servings: int = Field(ge=1)
    prep_minutes: int = Field(ge=0)
    cook_minutes: int = Field(ge=0)
    ingredients: list[RecipeIngredient] = Field(min_length=1)
    steps: list[str] = Field(min_length=1)
    dietary: list[DietaryTag] = Field(default_factory=list)
    source: str = Field(default="", description="Where the recipe comes from (book, site, person).")
    notes: str = ""
