#include "quantize_adapter.h"

#include <QInputDialog>
#include <QMessageBox>
#include <QProgressDialog>
#include <QTimer>

#include <atomic>
#include <filesystem>
#include <memory>

#include "background.h"

#if __has_include("tandem/hf/quantize.h")
#include "tandem/hf/quantize.h"
#define TANDEM_UI_HAS_QUANTIZER 1
#endif

namespace tandem::ui {

#ifdef TANDEM_UI_HAS_QUANTIZER

QString quantizeUnavailableReason() {
    return {};
}

void runQuantizeDialog(QWidget* parent, const QString& sourcePath,
                       std::function<void(const QString&)> done,
                       std::function<void(const QString&)> failed) {
    const QStringList schemes = {QStringLiteral("Q4_K_M"), QStringLiteral("Q5_K_M"),
                                 QStringLiteral("Q6_K"), QStringLiteral("Q8_0"),
                                 QStringLiteral("Q4_0")};
    bool ok = false;
    const QString scheme = QInputDialog::getItem(
        parent, QObject::tr("Quantize"),
        QObject::tr("Quantization of the copy (the source must be F32, F16 or BF16):"), schemes, 0,
        false, &ok);
    if (!ok) return;
    const auto s = hf::quant_scheme_from_name(scheme.toStdString());
    if (!s) return;
    const std::filesystem::path src = sourcePath.toStdString();
    const std::filesystem::path out =
        src.parent_path() / (src.stem().string() + "-" + scheme.toStdString() + ".gguf");
    auto* dialog =
        new QProgressDialog(QObject::tr("Quantizing to %1…").arg(scheme), {}, 0, 1000, parent);
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setMinimumDuration(0);
    auto fraction = std::make_shared<std::atomic<int>>(0);
    auto* timer = new QTimer(dialog);
    QObject::connect(timer, &QTimer::timeout, dialog,
                     [dialog, fraction] { dialog->setValue(fraction->load()); });
    timer->start(100);
    const hf::QuantScheme scheme_v = *s;
    runInBackground(
        dialog,
        [src, out, scheme_v, fraction] {
            hf::QuantizeOptions o;
            o.scheme = scheme_v;
            o.progress = [fraction](const hf::QuantizeProgress& p) {
                if (p.bytes_total) fraction->store(int(1000 * p.bytes_done / p.bytes_total));
            };
            hf::quantize_gguf(src, out, o);
            return QString::fromStdString(out.string());
        },
        [dialog, done, failed](Outcome<QString> r) {
            dialog->close();
            if (r.ok()) {
                if (done) done(*r.value);
            } else if (failed) {
                failed(r.error);
            }
        });
}

#else

QString quantizeUnavailableReason() {
    return QObject::tr(
        "This build has no quantizer (tandem/hf/quantize.h); quantize with "
        "tandem-cli and import the file");
}

void runQuantizeDialog(QWidget*, const QString&, std::function<void(const QString&)>,
                       std::function<void(const QString&)> failed) {
    if (failed) failed(quantizeUnavailableReason());
}

#endif

}  // namespace tandem::ui
