# Sphinx (Debian's python3-sphinx 5.3) with the Furo theme (Debian's furo),
# served from /sphinx/ (build/examples/sphinx/ under a static server; Sphinx
# writes relative links, so any base path works).
project = 'attention-lab in Sphinx'
html_theme = 'furo'
html_title = 'attention-lab in Sphinx'
# _static/attention-lab/ holds the package's web/ and data/models/ folders, as
# in the package, copied there by scripts/examples-build.mjs
# (cp -r node_modules/attention-lab/web node_modules/attention-lab/data source/_static/attention-lab/).
html_static_path = ['_static']
html_css_files = ['attention-lab-theme.css']
# define.js as a module script; it finds the .wasm files in attention-lab/web/dist/,
# and the model="en" heatmap fetches the shipped model from attention-lab/data/models/.
html_js_files = [('attention-lab/web/components/define.js', {'type': 'module'})]


# --- Debian's furo (2022.12.07+dfsg) needs two fixes to work from a static
# host; a furo from PyPI needs neither.
#  1. It ships furo.js unbundled: `import Gumshoe from "./gumshoe-patched.js"`
#     in a file loaded as a classic script (and gumshoe-patched.js is a UMD
#     script with no ES export): furo.js fails and the theme toggle never
#     works. Load gumshoe-patched.js first as a classic script (it sets
#     window.Gumshoe) and drop the import line from the copied furo.js.
#  2. Its furo.css imports normalize.css from /javascript/normalize.css/
#     (Debian's web-server alias): inline that file instead.
import os

_NORMALIZE = '/usr/share/javascript/normalize.css/normalize.css'
_PATCHES = {
    ('styles', 'furo.css'): ('@import url(/javascript/normalize.css/normalize.css);',
                             lambda: open(_NORMALIZE, encoding='utf-8').read() if os.path.exists(_NORMALIZE) else ''),
    ('scripts', 'furo.js'): ('import Gumshoe from "./gumshoe-patched.js";', lambda: ''),
}


def _patch_debian_furo(app, exception):
    if exception:
        return
    for parts, (old, new) in _PATCHES.items():
        path = os.path.join(app.outdir, '_static', *parts)
        if not os.path.exists(path):
            continue
        with open(path, encoding='utf-8') as f:
            text = f.read()
        if old in text:
            with open(path, 'w', encoding='utf-8') as f:
                f.write(text.replace(old, new()))


def setup(app):
    gumshoe = '/usr/lib/python3/dist-packages/furo/theme/furo/static/scripts/gumshoe-patched.js'
    if os.path.exists(gumshoe):
        app.add_js_file('scripts/gumshoe-patched.js', priority=199)
    app.connect('build-finished', _patch_debian_furo)
