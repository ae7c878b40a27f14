"""Interactive widgets: thin ipywidgets shells over plain functions in the topic modules."""
