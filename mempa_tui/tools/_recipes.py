"""Recipe tools (paper Table 7, domain Recipes: 1 read).

Collection: ``recipes/recipes``. There is no separate read tool, so a search returns each recipe
in full (ingredients and steps).

Decisions (Appendix C.2 leaves them open):
- Dietary filters come from a fixed list (vegetarian, vegan, ...); any other label is rejected
  with the list. A recipe must carry every label asked for.
- ``ingredients`` must all appear in the recipe and ``exclude_ingredients`` must all be absent;
  an ingredient matches when its name contains the words given ('flour' matches 'plain flour').
- Results are ordered by total time (prep + cook), quickest first.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, JsonValue

from mempa_tui.tools._common import Limit, NameList, matches, view
from mempa_tui.tools._registry import tool
from mempa_tui.world import WorkingCopy
from mempa_tui.world._records_recipes import DietaryTag, Recipe

__all__ = ["recipe_search"]

RECIPES = "recipes/recipes"


def _one_or_many(value: object) -> object:
    return [value] if isinstance(value, str) else value


DietaryList = Annotated[list[DietaryTag], BeforeValidator(_one_or_many)]
Minutes = Annotated[int, Field(ge=1, le=2880)]


def _has(recipe: Recipe, ingredient: str) -> bool:
    return any(matches(ingredient, i.name) for i in recipe.ingredients)


def _shown(r: Recipe) -> dict[str, Any]:
    out = view(r, None)
    out["total_minutes"] = r.prep_minutes + r.cook_minutes
    return out


@tool(domain="recipes")
def recipe_search(
    wc: WorkingCopy,
    query: str = "",
    ingredients: NameList = (),
    exclude_ingredients: NameList = (),
    dietary: DietaryList | None = None,
    max_total_minutes: Minutes | None = None,
    limit: Limit = 5,
) -> JsonValue:
    """Find recipes, quickest first; each comes in full with ingredients and steps.

    Args:
        query: words that must all appear in the title, cuisine, course or notes; empty matches all.
        ingredients: ingredients the recipe must use.
        exclude_ingredients: ingredients it must not use.
        dietary: dietary labels it must carry.
        max_total_minutes: most minutes of preparation plus cooking.
        limit: most recipes to return.

    Returns:
        the number of matches and the recipes.
    """
    wanted = list(dietary or [])
    found = [
        r
        for r in wc.records_as(RECIPES, Recipe)
        if matches(query, r.title, r.cuisine, r.course, r.notes)
        and all(_has(r, i) for i in ingredients)
        and not any(_has(r, i) for i in exclude_ingredients)
        and all(tag in r.dietary for tag in wanted)
        and (max_total_minutes is None or r.prep_minutes + r.cook_minutes <= max_total_minutes)
    ]
    found.sort(key=lambda r: (r.prep_minutes + r.cook_minutes, r.title))
    return {"count": len(found), "recipes": [_shown(r) for r in found[:limit]]}
