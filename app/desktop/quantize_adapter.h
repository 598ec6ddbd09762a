#pragma once
// The Models page's Quantize dialog, kept behind this adapter because the quantizer
// (tandem/hf/quantize.h) is optional in a build: without it the button is disabled and its
// tooltip says why.
#include <QString>
#include <QWidget>

#include <functional>

namespace tandem::ui {

// "" when quantizing is available; else why not (shown as the button's tooltip).
QString quantizeUnavailableReason();

// Asks for a scheme, writes <stem>-<SCHEME>.gguf beside `sourcePath` on a background thread with
// a progress dialog; `done(outputPath)` is called on success (the caller
// imports it into the library), `failed(message)` otherwise.
void runQuantizeDialog(QWidget* parent, const QString& sourcePath,
                       std::function<void(const QString&)> done = {},
                       std::function<void(const QString&)> failed = {});

}  // namespace tandem::ui
