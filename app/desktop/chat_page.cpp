#include "chat_page.h"

#include <QFileDialog>
#include <QHBoxLayout>
#include <QInputDialog>
#include <QMenu>
#include <QMessageBox>
#include <QPointer>
#include <QShortcut>
#include <QSplitter>
#include <QVBoxLayout>

#include "background.h"
#include "chat_settings_dialog.h"

namespace tandem::ui {

namespace {
const QString kOpenFile = QStringLiteral("\x01open");  // the picker's "Open file…" entry
}

ChatPage::ChatPage(std::shared_ptr<store::ChatStore> store, QWidget* parent)
    : QWidget(parent),
      store_(std::move(store)),
      async_(std::make_unique<store::AsyncChatStore>(store_)) {
    qRegisterMetaType<tandem::ui::RuntimeChoice>();
    setNewChatSettings({}, samplingPreset(QStringLiteral("precise")));

    // --- left: search and conversations ---
    auto* left = new QWidget(this);
    auto* leftLayout = new QVBoxLayout(left);
    leftLayout->setContentsMargins(8, 8, 4, 8);
    auto* newChat = new QPushButton(tr("New chat"), left);
    search_ = new QLineEdit(left);
    search_->setPlaceholderText(tr("Search messages"));
    search_->setClearButtonEnabled(true);
    showArchived_ = new QCheckBox(tr("Show archived"), left);
    conversations_ = new ConversationListModel(*async_, this);
    list_ = new QListView(left);
    list_->setModel(conversations_);
    list_->setUniformItemSizes(true);
    list_->setContextMenuPolicy(Qt::CustomContextMenu);
    leftLayout->addWidget(newChat);
    leftLayout->addWidget(search_);
    leftLayout->addWidget(list_, 1);
    leftLayout->addWidget(showArchived_);

    // --- right: header, banner, messages, input ---
    auto* right = new QWidget(this);
    auto* rightLayout = new QVBoxLayout(right);
    rightLayout->setContentsMargins(4, 8, 8, 8);
    auto* header = new QHBoxLayout;
    picker_ = new QComboBox(right);
    picker_->setMinimumWidth(260);
    picker_->setToolTip(tr("The model that answers"));
    picker_->addItem(tr("No model loaded"), QString());
    picker_->addItem(tr("Open a GGUF file…"), kOpenFile);
    settingsButton_ = new QPushButton(tr("Chat settings"), right);
    settingsButton_->setToolTip(tr("System prompt and sampling of this conversation"));
    stats_ = new QLabel(right);
    stats_->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    stats_->setTextInteractionFlags(Qt::TextSelectableByMouse);
    header->addWidget(picker_);
    header->addWidget(settingsButton_);
    header->addStretch(1);
    header->addWidget(stats_);
    banner_ = new QLabel(right);
    banner_->setWordWrap(true);
    banner_->setStyleSheet(
        QStringLiteral("QLabel { background: #fdecea; color: #8a1c12; border: 1px solid #f5c2bd;"
                       " border-radius: 6px; padding: 8px; }"));
    banner_->hide();
    editBar_ = new QWidget(right);
    auto* editLayout = new QHBoxLayout(editBar_);
    editLayout->setContentsMargins(8, 4, 8, 4);
    auto* editLabel = new QLabel(tr("Editing a message: Send keeps the old version as a branch"));
    auto* cancelEditButton = new QPushButton(tr("Cancel edit"));
    editLayout->addWidget(editLabel, 1);
    editLayout->addWidget(cancelEditButton);
    editBar_->setStyleSheet(QStringLiteral("QWidget { background: #eef4fd; border-radius: 6px; }"));
    editBar_->hide();
    view_ = new MessageView(right);
    input_ = new QPlainTextEdit(right);
    input_->setPlaceholderText(tr("Message the model (Ctrl+Enter to send)"));
    input_->setMaximumHeight(110);
    send_ = new QPushButton(tr("Send"), right);
    send_->setDefault(true);
    stop_ = new QPushButton(tr("Stop"), right);
    auto* buttons = new QVBoxLayout;
    buttons->addWidget(send_);
    buttons->addWidget(stop_);
    buttons->addStretch(1);
    auto* inputRow = new QHBoxLayout;
    inputRow->addWidget(input_, 1);
    inputRow->addLayout(buttons);
    rightLayout->addLayout(header);
    rightLayout->addWidget(banner_);
    rightLayout->addWidget(view_, 1);
    rightLayout->addWidget(editBar_);
    rightLayout->addLayout(inputRow);

    auto* split = new QSplitter(this);
    split->addWidget(left);
    split->addWidget(right);
    split->setStretchFactor(1, 1);
    split->setSizes({260, 840});
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(split);

    connect(newChat, &QPushButton::clicked, this, &ChatPage::newConversation);
    connect(search_, &QLineEdit::textChanged, conversations_,
            &ConversationListModel::setSearchText);
    connect(showArchived_, &QCheckBox::toggled, conversations_,
            &ConversationListModel::setShowArchived);
    connect(list_, &QListView::activated, this,
            [this](const QModelIndex& i) { openConversation(conversations_->idAt(i.row())); });
    connect(list_, &QListView::clicked, this,
            [this](const QModelIndex& i) { openConversation(conversations_->idAt(i.row())); });
    connect(list_, &QWidget::customContextMenuRequested, this, &ChatPage::showListMenu);
    connect(send_, &QPushButton::clicked, this, &ChatPage::sendInput);
    connect(stop_, &QPushButton::clicked, this, &ChatPage::stop);
    connect(cancelEditButton, &QPushButton::clicked, this, &ChatPage::cancelEdit);
    connect(settingsButton_, &QPushButton::clicked, this, &ChatPage::editChatSettings);
    auto* sendKey = new QShortcut(QKeySequence(Qt::CTRL | Qt::Key_Return), input_);
    connect(sendKey, &QShortcut::activated, this, &ChatPage::sendInput);
    connect(conversations_, &ConversationListModel::refreshed, this, [this] {
        const int row = conversations_->rowOf(current_);
        if (row >= 0) list_->setCurrentIndex(conversations_->index(row));
    });
    connect(conversations_, &ConversationListModel::failed, this, &ChatPage::showError);
    connect(view_, &MessageView::editRequested, this, &ChatPage::beginEdit);
    connect(view_, &MessageView::regenerateRequested, this, &ChatPage::regenerate);
    connect(view_, &MessageView::branchRequested, this, &ChatPage::switchBranch);
    connect(picker_, &QComboBox::activated, this, [this](int index) {
        const QString path = picker_->itemData(index).toString();
        if (path == kOpenFile) {
            const QString file = QFileDialog::getOpenFileName(this, tr("Open a model"), {},
                                                              tr("GGUF models (*.gguf)"));
            if (!file.isEmpty()) loadModel(file);
            return;
        }
        if (!path.isEmpty() && path != loadedPath_) loadModel(path);
    });

    // --- the worker ---
    worker_ = new GenerationWorker(store_);
    worker_->moveToThread(&thread_);
    thread_.setObjectName(QStringLiteral("generation"));
    connect(worker_, &GenerationWorker::modelLoaded, this,
            [this](const QString& name, const QString& device, qint64 nCtx) {
                modelLoaded_ = true;
                device_ = device;
                stats_->setText(tr("%1 · context %2").arg(device).arg(nCtx));
                stats_->setToolTip(name);
                banner_->hide();
                updateButtons();
                emit modelReady(name);
            });
    connect(worker_, &GenerationWorker::modelFailed, this,
            [this](const QString& message, bool tooBig) {
                modelLoaded_ = false;
                loadedPath_.clear();
                picker_->setCurrentIndex(0);
                stats_->clear();
                showError(tooBig ? tr("Model too big: %1").arg(message)
                                 : tr("The model could not be loaded: %1").arg(message));
                updateButtons();
                emit modelFailed(message);
            });
    connect(worker_, &GenerationWorker::userMessageSaved, this, [this](qint64 conversation) {
        if (current_ != conversation) {
            current_ = conversation;
            emit conversationOpened(conversation);
        }
        conversations_->refresh();
    });
    connect(worker_, &GenerationWorker::generationStarted, this,
            [this](qint64, qint64) { view_->appendMessage(QStringLiteral("assistant"), {}); });
    connect(worker_, &GenerationWorker::piece, this, [this](const QString& text) {
        view_->appendToLast(text);
        emit tokenShown(text);
    });
    connect(worker_, &GenerationWorker::progress, this,
            [this](qint64 tokens, double tps, qint64 used, qint64 nCtx) {
                stats_->setText(tr("%1 tok/s · %2 tokens · context %3/%4 · %5")
                                    .arg(tps, 0, 'f', 1)
                                    .arg(tokens)
                                    .arg(used)
                                    .arg(nCtx)
                                    .arg(device_));
            });
    connect(worker_, &GenerationWorker::generationFinished, this,
            [this](qint64 id, const QString& reason, double tps, qint64 used, qint64 nCtx) {
                generating_ = false;
                stats_->setText(tr("%1 tok/s · context %2/%3 · %4")
                                    .arg(tps, 0, 'f', 1)
                                    .arg(used)
                                    .arg(nCtx)
                                    .arg(device_));
                updateButtons();
                conversations_->refresh();
                reloadConversation();
                emit generationFinished(id, reason);
            });
    connect(worker_, &GenerationWorker::generationFailed, this, [this](const QString& message) {
        generating_ = false;
        showError(message);
        updateButtons();
        // What was saved stays: show exactly what the database holds.
        reloadConversation();
        emit generationFinished(-1, QStringLiteral("error: ") + message);
    });
    connect(worker_, &GenerationWorker::clusterStatus, this, &ChatPage::clusterStatus);
    connect(worker_, &GenerationWorker::nodeLost, this, [this](const QString& message) {
        showError(message);
        emit nodeLost(message);
    });
    connect(worker_, &GenerationWorker::deviceChanged, this, [this](const QString& device) {
        device_ = device;
        stats_->setText(device);
    });
    thread_.start();

    updateButtons();
    conversations_->refresh();
}

ChatPage::~ChatPage() {
    worker_->requestStop();
    thread_.quit();
    thread_.wait();
    delete worker_;
}

void ChatPage::setNewChatSettings(const QString& systemPrompt, const ChatSampling& sampling) {
    nlohmann::json j = {{"system_prompt", systemPrompt.toStdString()},
                        {"sampling", samplingToJson(sampling)}};
    newChatSettings_ = QString::fromStdString(j.dump());
}

void ChatPage::loadModel(const QString& path) {
    int i = picker_->findData(path);
    if (i < 0) {
        picker_->insertItem(picker_->count() - 1, path.section(QLatin1Char('/'), -1), path);
        i = picker_->findData(path);
    }
    picker_->setCurrentIndex(i);
    loadedPath_ = path;
    stats_->setText(tr("Loading %1…").arg(path.section(QLatin1Char('/'), -1)));
    modelLoaded_ = false;
    updateButtons();
    QMetaObject::invokeMethod(worker_, "loadModel", Qt::QueuedConnection, Q_ARG(QString, path),
                              Q_ARG(tandem::ui::RuntimeChoice, runtime_));
    emit modelPicked(path);
}

void ChatPage::setModelChoices(const QList<QPair<QString, QString>>& models) {
    // Keep "No model" first and "Open…" last; the loaded model stays even when not listed.
    while (picker_->count() > 2) picker_->removeItem(1);
    for (const auto& [name, path] : models) picker_->insertItem(picker_->count() - 1, name, path);
    if (!loadedPath_.isEmpty() && picker_->findData(loadedPath_) < 0)
        picker_->insertItem(picker_->count() - 1, loadedPath_.section(QLatin1Char('/'), -1),
                            loadedPath_);
    const int i = loadedPath_.isEmpty() ? 0 : picker_->findData(loadedPath_);
    picker_->setCurrentIndex(std::max(0, i));
}

void ChatPage::sendInput() {
    const QString text = input_->toPlainText().trimmed();
    if (text.isEmpty() || generating_ || !modelLoaded_) return;
    input_->clear();
    if (editing_ > 0) {
        const qint64 id = editing_;
        cancelEdit();
        // The view drops the edited message and what followed it; the reply streams below.
        auto entries = view_->messages();
        size_t keep = 0;
        while (keep < entries.size() && entries[keep].id != id) ++keep;
        entries.resize(keep);
        view_->setMessages(std::move(entries));
        view_->appendMessage(QStringLiteral("user"), text);
        startGenerating();
        QMetaObject::invokeMethod(worker_, "editMessage", Qt::QueuedConnection,
                                  Q_ARG(qint64, current_), Q_ARG(qint64, id), Q_ARG(QString, text),
                                  Q_ARG(int, maxTokens_));
        return;
    }
    send(text);
}

void ChatPage::startGenerating() {
    generating_ = true;
    banner_->hide();
    updateButtons();
}

void ChatPage::send(const QString& text) {
    if (generating_) return;
    if (current_ < 0) view_->setMessages({});
    view_->appendMessage(QStringLiteral("user"), text);
    startGenerating();
    QMetaObject::invokeMethod(worker_, "sendMessage", Qt::QueuedConnection, Q_ARG(qint64, current_),
                              Q_ARG(QString, text), Q_ARG(int, maxTokens_),
                              Q_ARG(QString, current_ < 0 ? newChatSettings_ : QString()));
}

void ChatPage::regenerate(qint64 messageId) {
    if (generating_ || !modelLoaded_ || current_ < 0) return;
    auto entries = view_->messages();
    size_t keep = 0;
    while (keep < entries.size() && entries[keep].id != messageId) ++keep;
    entries.resize(keep);
    view_->setMessages(std::move(entries));
    startGenerating();
    QMetaObject::invokeMethod(worker_, "regenerate", Qt::QueuedConnection, Q_ARG(qint64, current_),
                              Q_ARG(qint64, messageId), Q_ARG(int, maxTokens_));
}

void ChatPage::beginEdit(qint64 messageId, const QString& text) {
    if (generating_) return;
    editing_ = messageId;
    input_->setPlainText(text);
    input_->setFocus();
    editBar_->show();
}

void ChatPage::cancelEdit() {
    editing_ = -1;
    editBar_->hide();
}

void ChatPage::switchBranch(qint64 messageId, int delta) {
    if (generating_) return;
    writeThenReload([messageId, delta](store::ChatStore& s) {
        const auto sibs = s.siblings(messageId);
        int at = 0;
        while (at < int(sibs.size()) && sibs[size_t(at)].id != messageId) ++at;
        const int to = std::clamp(at + delta, 0, int(sibs.size()) - 1);
        s.select_branch(sibs[size_t(to)].id);
    });
}

void ChatPage::setArchived(qint64 id, bool archived) {
    writeThenReload([id, archived](store::ChatStore& s) { s.set_archived(id, archived); });
}

void ChatPage::writeThenReload(std::function<void(store::ChatStore&)> write) {
    QPointer<ChatPage> self(this);
    async_->write(std::move(write), [self](std::exception_ptr error) {
        QString message;
        if (error) {
            try {
                std::rethrow_exception(error);
            } catch (const std::exception& e) {
                message = QString::fromUtf8(e.what());
            }
        }
        postTo(self, [self, message] {
            if (!message.isEmpty()) self->showError(message);
            self->conversations_->refresh();
            self->reloadConversation();
        });
    });
}

void ChatPage::editChatSettings() {
    if (current_ < 0) {  // a new chat: the settings apply when it is created
        const auto j = nlohmann::json::parse(newChatSettings_.toStdString());
        ChatSettingsDialog dialog(QString::fromStdString(j.value("system_prompt", "")),
                                  samplingFromJson(j["sampling"]), this);
        if (dialog.exec() == QDialog::Accepted)
            setNewChatSettings(dialog.systemPrompt(), dialog.sampling());
        return;
    }
    const qint64 id = current_;
    QPointer<ChatPage> self(this);
    (void)async_->read([self, id](store::ChatStore& s) {
        QString prompt, error;
        nlohmann::json sampling;
        try {
            const auto c = s.conversation(id);
            prompt = QString::fromStdString(c.system_prompt);
            sampling = c.sampling;
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        postTo(self, [self, id, prompt, sampling, error] {
            if (!error.isEmpty()) return self->showError(error);
            ChatSettingsDialog dialog(prompt, samplingFromJson(sampling), self);
            if (dialog.exec() != QDialog::Accepted || !self) return;
            const std::string p = dialog.systemPrompt().toStdString();
            const nlohmann::json j = samplingToJson(dialog.sampling());
            self->writeThenReload([id, p, j](store::ChatStore& s) {
                s.set_system_prompt(id, p);
                s.set_sampling(id, j);
            });
        });
    });
}

void ChatPage::showListMenu(const QPoint& pos) {
    const QModelIndex index = list_->indexAt(pos);
    if (!index.isValid()) return;
    const qint64 id = conversations_->idAt(index.row());
    const bool archived = index.data(ConversationListModel::ArchivedRole).toBool();
    const QString title = index.data(Qt::DisplayRole).toString();
    QMenu menu(this);
    QAction* rename = menu.addAction(tr("Rename…"));
    QAction* pin = menu.addAction(tr("Pin to top"));
    QAction* archive = menu.addAction(archived ? tr("Unarchive") : tr("Archive"));
    menu.addSeparator();
    QAction* remove = menu.addAction(tr("Delete…"));
    QAction* chosen = menu.exec(list_->viewport()->mapToGlobal(pos));
    if (chosen == rename) {
        bool ok = false;
        const QString t =
            QInputDialog::getText(this, tr("Rename"), tr("Title"), QLineEdit::Normal, title, &ok);
        if (ok && !t.trimmed().isEmpty())
            writeThenReload([id, t = t.trimmed().toStdString()](store::ChatStore& s) {
                s.rename_conversation(id, t);
            });
    } else if (chosen == pin) {
        writeThenReload([id](store::ChatStore& s) { s.set_pinned(id, true); });
    } else if (chosen == archive) {
        setArchived(id, !archived);
    } else if (chosen == remove) {
        if (QMessageBox::question(this, tr("Delete"),
                                  tr("Delete \"%1\" and all its messages?").arg(title)) !=
            QMessageBox::Yes)
            return;
        if (id == current_) newConversation();
        writeThenReload([id](store::ChatStore& s) { s.delete_conversation(id); });
    }
}

void ChatPage::stop() {
    worker_->requestStop();
}

void ChatPage::newConversation() {
    if (generating_) return;
    current_ = -1;
    ++openTicket_;
    cancelEdit();
    list_->clearSelection();
    view_->setMessages({});
    input_->setFocus();
}

void ChatPage::openConversation(qint64 id) {
    if (id < 0 || generating_ || id == current_) return;
    current_ = id;
    cancelEdit();
    reloadConversation();
}

void ChatPage::reloadConversation() {
    if (current_ < 0) return;
    const qint64 id = current_;
    const quint64 ticket = ++openTicket_;
    QPointer<ChatPage> self(this);
    (void)async_->read([self, id, ticket](store::ChatStore& s) {
        std::vector<MessageView::Entry> entries;
        QString error;
        try {
            for (const auto& m : s.active_path(id)) {
                MessageView::Entry e;
                e.role = QString::fromUtf8(store::role_name(m.role));
                e.text = QString::fromStdString(m.content);
                e.id = m.id;
                e.siblingIndex = m.sibling_index;
                e.siblingCount = m.sibling_count;
                entries.push_back(std::move(e));
            }
        } catch (const std::exception& e) {
            error = QString::fromUtf8(e.what());
        }
        postTo(self, [self, id, ticket, entries = std::move(entries), error]() mutable {
            if (ticket != self->openTicket_ || self->generating_) return;
            if (!error.isEmpty()) self->showError(error);
            self->view_->setMessages(std::move(entries));
            emit self->conversationOpened(id);
            emit self->conversationReloaded(id);
        });
    });
}

void ChatPage::showError(const QString& message) {
    banner_->setText(message);
    banner_->show();
}

void ChatPage::updateButtons() {
    send_->setEnabled(modelLoaded_ && !generating_);
    stop_->setEnabled(generating_);
    view_->setActionsEnabled(!generating_);
    picker_->setEnabled(!generating_);
}

}  // namespace tandem::ui
