"""Request and response bodies, one module per resource, named as in the interface specification.

The class names are the OpenAPI component names: renaming one changes the published document.
"""
