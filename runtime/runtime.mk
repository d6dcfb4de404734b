# Floem's runtime archive: the C files of src/ and library/ beside this file that OBJECTS
# names (without .c: src/net library/hash ...; default: all of them), compiled with CC and
# CFLAGS and archived with AR as ARCHIVE. A generated Makefile runs it when the archive it
# links is missing from the build cache:
#
#   make -f runtime/runtime.mk ARCHIVE=PATH OBJECTS='src/net ...' CC=gcc AR=ar CFLAGS='-O2 ...'
#
# The sources are copied beside ARCHIVE once (what the objects' debugging information
# names), each object is compiled there the first time an archive of that directory needs
# it and kept for the others (obj/). Objects and archives are written under names of their
# own and linked into place only where none is yet (`ln` fails on an existing name): so
# builds sharing them may run at once, and a file another build is reading is never
# replaced (two compiles of one file differ, in the build directory their debugging
# information names).
ARCHIVE ?= libfloem.a
AR ?= ar
here := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))
home := $(patsubst %/,%,$(dir $(ARCHIVE)))
OBJECTS ?= $(basename $(patsubst $(here)/%,%,$(wildcard $(here)/src/*.c $(here)/library/*.c)))
$(shell mkdir -p $(home))
$(shell [ -e $(home)/include ] || { work=$$(mktemp -d $(home)/sources.XXXXXX) && \
	cp -r $(here)/src $(here)/library $(here)/include $$work && \
	for d in src library include; do [ -e $(home)/$$d ] || mv -T $$work/$$d $(home)/$$d 2>/dev/null; done; \
	rm -rf $$work; })
objects := $(foreach o,$(OBJECTS),$(home)/obj/$(o).o)
# Put FILE.<shell's pid> in place as FILE unless another build did first.
place = { ln $(1).$$$$ $(1) 2>/dev/null || [ -e $(1) ]; } && rm -f $(1).$$$$

$(ARCHIVE): $(objects)
	rm -f $@.$$$$ && $(AR) rcs $@.$$$$ $(objects) && $(call place,$@)

$(home)/obj/%.o: $(home)/%.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -I$(home)/include -c $< -o $@.$$$$ && $(call place,$@)

.PHONY: $(ARCHIVE)
