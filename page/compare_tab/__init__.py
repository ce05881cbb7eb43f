"""The Compare tab: two settings, two chains side by side.

`tab` lays out and wires the tab (lessons, the A/B table, the "Why is it fooled?" panel);
`sides` turns what a visitor sends (form values, the API's JSON) into the two sides.
"""

__all__ = ["sides", "tab"]
