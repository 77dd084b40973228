# Sourced by the GPT's tests, which train on Debian's fortunes: where the corpus is missing the
# test fails saying how to install it, since a test that passed having checked nothing would hide
# that nothing was checked.
if [ ! -d /usr/share/games/fortunes ]; then
  echo "FAIL: /usr/share/games/fortunes is missing: bash tools/setup.sh installs it (the fortunes package;" \
    "apt-get install fortunes)"
  exit 1
fi
